package helmreconciler

import "testing"

func TestContains(t *testing.T) {
	obj := func(port any, extra ...string) map[string]any {
		p := map[string]any{"port": port, "name": "http"}
		for _, k := range extra {
			p[k] = "x"
		}
		return map[string]any{"spec": map[string]any{"ports": []any{p}, "type": "ClusterIP"}}
	}
	cases := []struct {
		name       string
		have, want any
		contained  bool
	}{
		{"identical", obj(int64(80)), obj(int64(80)), true},
		{"live object has defaults", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80), "name": "http", "protocol": "TCP"}},
			"type": "ClusterIP", "clusterIP": "10.0.0.1"}}, obj(int64(80)), true},
		{"edited list key", obj(int64(9999)), obj(int64(80)), false},
		{"extra list element", map[string]any{"spec": map[string]any{"ports": []any{
			map[string]any{"port": int64(80), "name": "http"}, map[string]any{"port": int64(81), "name": "x"}}, "type": "ClusterIP"}}, obj(int64(80)), false},
		{"missing field", map[string]any{"spec": map[string]any{"type": "ClusterIP"}}, obj(int64(80)), false},
		{"changed scalar", map[string]any{"spec": map[string]any{"replicas": int64(7)}}, map[string]any{"spec": map[string]any{"replicas": int64(2)}}, false},
		{"int and float of one value", map[string]any{"n": float64(2)}, map[string]any{"n": int64(2)}, true},
		{"null wanted", map[string]any{"a": "b"}, map[string]any{"creationTimestamp": nil}, true},
		{"empty map wanted, none there", map[string]any{}, map[string]any{"labels": map[string]any{}}, true},
		{"extra annotations", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "1", "b": "2"}}},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "1"}}}, true},
		{"changed annotation", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "2"}}},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "1"}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contains(tc.have, tc.want); got != tc.contained {
				t.Errorf("contains = %v, want %v", got, tc.contained)
			}
		})
	}
}
