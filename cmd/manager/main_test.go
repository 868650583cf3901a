package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSplitNamespaces(t *testing.T) {
	cases := map[string][]string{
		"":              nil,
		"team-a":        {"team-a"},
		"team-a,team-b": {"team-a", "team-b"},
		" a , ,b ":      {"a", "b"},
	}
	for in, want := range cases {
		if got := splitNamespaces(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitNamespaces(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestMoverEnvIsTheProxy: the data mover pods get the proxy settings OLM
// sets on the operator's Deployment, in both cases, and nothing else of
// the operator's environment.
func TestMoverEnvIsTheProxy(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []corev1.EnvVar
	}{
		{"no proxy", nil, []corev1.EnvVar{}},
		{"OLM's variables", map[string]string{"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".svc,10.0.0.0/8"}, []corev1.EnvVar{
			{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "https_proxy", Value: "http://proxy:3128"},
			{Name: "NO_PROXY", Value: ".svc,10.0.0.0/8"}, {Name: "no_proxy", Value: ".svc,10.0.0.0/8"},
		}},
		{"credentials stay behind", map[string]string{"HTTPS_PROXY": "http://user:s3cr%40t@proxy:3128", "HTTP_PROXY": "user:pw@proxy:3128/"}, []corev1.EnvVar{
			{Name: "HTTP_PROXY", Value: "proxy:3128/"}, {Name: "http_proxy", Value: "proxy:3128/"},
			{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "https_proxy", Value: "http://proxy:3128"},
		}},
		{"all three", map[string]string{"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:2", "NO_PROXY": "a"}, []corev1.EnvVar{
			{Name: "HTTP_PROXY", Value: "http://p:1"}, {Name: "http_proxy", Value: "http://p:1"},
			{Name: "HTTPS_PROXY", Value: "http://p:2"}, {Name: "https_proxy", Value: "http://p:2"},
			{Name: "NO_PROXY", Value: "a"}, {Name: "no_proxy", Value: "a"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
				// Set, then unset when the case has none: restored after.
				t.Setenv(name, tc.env[name])
				if _, ok := tc.env[name]; !ok {
					_ = os.Unsetenv(name)
				}
			}
			t.Setenv("AWS_SECRET_ACCESS_KEY", "not for the mover")
			if got := moverEnv(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("moverEnv() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGoMemoryLimit(t *testing.T) {
	tests := []struct {
		name, memoryLimit, gomemlimit string
		want                          int64
		wantSet                       bool
	}{
		{name: "the container's limit less the headroom", memoryLimit: "1073741824", want: 912680550, wantSet: true},
		{name: "GOMEMLIMIT wins", memoryLimit: "1073741824", gomemlimit: "500MiB"},
		{name: "no limit given"},
		{name: "not a number", memoryLimit: "1Gi"},
		{name: "zero", memoryLimit: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(memoryLimitEnv, tt.memoryLimit)
			// Set, then unset when the case has none: restored after.
			t.Setenv("GOMEMLIMIT", tt.gomemlimit)
			if tt.gomemlimit == "" {
				_ = os.Unsetenv("GOMEMLIMIT")
			}
			got, ok := goMemoryLimit()
			if got != tt.want || ok != tt.wantSet {
				t.Errorf("goMemoryLimit() = %d, %v; want %d, %v", got, ok, tt.want, tt.wantSet)
			}
		})
	}
}

func TestEgressFromEnv(t *testing.T) {
	env := map[string]string{
		"STORAGE_EGRESS_ALLOW": "10.96.0.15, 192.168.10.0/24",
		"CLUSTER_NETWORKS":     "10.96.0.0/12,10.244.0.0/16",
		"STORAGE_PROXY":        "http://proxy.infra:3128",
	}
	allow, cluster, proxy, err := egressFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if allow.String() != "10.96.0.15/32,192.168.10.0/24" || cluster.String() != "10.96.0.0/12,10.244.0.0/16" || proxy.String() != "http://proxy.infra:3128" {
		t.Errorf("egressFromEnv = %s; %s; %v", allow.String(), cluster.String(), proxy)
	}
	// The flags add to the environment's ranges.
	if err := allow.Set("127.0.0.3/32"); err != nil || allow.String() != "10.96.0.15/32,192.168.10.0/24,127.0.0.3/32" {
		t.Errorf("after the flag: %s, %v", allow.String(), err)
	}

	allow, cluster, proxy, err = egressFromEnv(func(string) string { return "" })
	if err != nil || len(allow) != 0 || len(cluster) != 0 || proxy != nil {
		t.Errorf("an empty environment: %v, %v, %v, %v", allow, cluster, proxy, err)
	}
	for k, v := range map[string]string{"STORAGE_EGRESS_ALLOW": "10.1.2.3/8", "CLUSTER_NETWORKS": "pods", "STORAGE_PROXY": "proxy:3128"} {
		if _, _, _, err := egressFromEnv(func(name string) string {
			if name == k {
				return v
			}
			return ""
		}); err == nil || !strings.Contains(err.Error(), "$"+k) {
			t.Errorf("%s=%s: %v, want an error naming the variable", k, v, err)
		}
	}
}
