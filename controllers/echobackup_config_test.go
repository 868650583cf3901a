package controllers

import (
	"encoding/json"
	"testing"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// TestBackedUpConfigCarriesTheEchoWhereInspectLooks: inspect hands back
// the configuration's moverprotocol.ConfigEcho member, which must be the
// Echo a backup captures.
func TestBackedUpConfigCarriesTheEchoWhereInspectLooks(t *testing.T) {
	cfg := backedUpConfig{Echo: backedUpEcho{Kind: "Echo", Metadata: backedUpMeta{Name: "web"},
		Spec: echov1alpha1.EchoSpec{Message: "hi"}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		t.Fatal(err)
	}
	var echo echov1alpha1.Echo
	if err := json.Unmarshal(members[moverprotocol.ConfigEcho], &echo); err != nil || echo.Name != "web" || echo.Spec.Message != "hi" {
		t.Fatalf("member %q of %s is not the Echo: %+v, %v", moverprotocol.ConfigEcho, b, echo.ObjectMeta, err)
	}
}
