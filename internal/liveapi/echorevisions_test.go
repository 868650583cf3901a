package liveapi

import (
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
)

func TestRevisionNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		echo    string
		version int
		ok      bool
	}{
		{name: "web.v3", echo: "web", version: 3, ok: true},
		{name: "my-echo.v12", echo: "my-echo", version: 12, ok: true},
		{name: "web.v0"},
		{name: "web.v03"},
		{name: "web.v-1"},
		{name: "web.v"},
		{name: ".v1"},
		{name: "web"},
		{name: "web.3"},
	} {
		echo, version, ok := parseRevisionName(tc.name)
		if echo != tc.echo || version != tc.version || ok != tc.ok {
			t.Errorf("parseRevisionName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, echo, version, ok, tc.echo, tc.version, tc.ok)
		}
		if tc.ok && revisionName(echo, version) != tc.name {
			t.Errorf("revisionName(%q, %d) = %q", echo, version, revisionName(echo, version))
		}
	}
}

func TestEchoRevisionFromTheCache(t *testing.T) {
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	last := first.Add(time.Hour)
	got := echoRevision(&releaserecords.Revision{
		Namespace: "team-a", Release: "web", Version: 2, Status: release.StatusDeployed, Record: "sh.helm.release.v1.web.v2",
		Summary: releaserecords.RevisionSummary{
			Chart: "echo", ChartVersion: "0.1.0", AppVersion: "1.2.3", Description: "Upgrade complete",
			FirstDeployed: first, LastDeployed: last,
		},
	})
	if got.Name != "web.v2" || got.Namespace != "team-a" || got.Labels["live.echo.dev/echo"] != "web" {
		t.Errorf("metadata = %+v", got.ObjectMeta)
	}
	if got.Echo != "web" || got.Revision != 2 || got.Status != "deployed" || got.Chart != "echo-0.1.0" ||
		got.ChartVersion != "0.1.0" || got.AppVersion != "1.2.3" || got.Description != "Upgrade complete" {
		t.Errorf("revision = %+v", got)
	}
	if !got.FirstDeployed.Equal(&metav1.Time{Time: first}) || !got.LastDeployed.Equal(&metav1.Time{Time: last}) || !got.CreationTimestamp.Time.Equal(last) {
		t.Errorf("times = %v, %v, created %v", got.FirstDeployed, got.LastDeployed, got.CreationTimestamp)
	}
	if got.Values != nil || got.Manifest != "" {
		t.Errorf("a listed revision carries values or a manifest: %+v", got)
	}
}

func TestEchoRevisionTable(t *testing.T) {
	now := metav1.Now()
	table, err := echoRevisionTable.ConvertToTable(t.Context(), &livev1alpha1.EchoRevisionList{Items: []livev1alpha1.EchoRevision{{
		ObjectMeta: metav1.ObjectMeta{Name: "web.v1"}, Echo: "web", Revision: 1, Status: "superseded", Chart: "echo-0.1.0",
		AppVersion: "0.1.0", LastDeployed: &now, Description: "Install complete",
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 8 || len(table.Rows) != 1 {
		t.Fatalf("table = %+v", table)
	}
	want := []any{"web.v1", "web", int64(1), "superseded", "echo-0.1.0", "0.1.0", "0s", "Install complete"}
	for i, c := range table.Rows[0].Cells {
		if c != want[i] {
			t.Errorf("cell %d (%s) = %v; want %v", i, table.ColumnDefinitions[i].Name, c, want[i])
		}
	}
	if _, err := echoRevisionTable.ConvertToTable(t.Context(), &metav1.Status{}, nil); err == nil {
		t.Error("a Status converted to an EchoRevision table")
	}
}
