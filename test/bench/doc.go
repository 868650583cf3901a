// Command bench is the scale benchmark (`make bench-scale`). It compares
// three ways of getting N echo services (a Deployment and a Service each,
// rendered from helm-charts/echo) running on a simulated cluster:
// A command of the test wing: it imports the product and test/harness;
// nothing imports it.
//
//   - echo: echo-operator's manager, fed echo.dev Echos;
//   - stock: the stock helm-operator of helm-operator-plugins, fed
//     schemaless Echos whose spec is the chart values echo-operator would
//     compute, so that both render the same objects;
//   - floor: no operator, the benchmark creating the rendered objects itself
//     with a plain parallel client.
//
// Each (system, N) runs on a fresh cluster: a baseline of the cluster's own
// API traffic, the rollout of N Echos at once, an idle window, a mass
// update, and for echo a restart that must not touch any release; with
// -upgrade (`make bench-upgrade`), echo-operator is then replaced by a new
// version twice, with the same chart and with a changed one, counting the
// revisions, rollouts and requests each costs. It writes a JSON results
// file and prints Markdown tables.
//
// Usage, from the repository root (see the Makefile's bench-scale target
// for the environment it needs):
//
//	go run ./test/bench -n 300,1000 -operators echo,stock,floor
//
// With -merge it runs nothing but merges earlier results files into one,
// and writes its JSON and Markdown as a run would:
//
//	go run ./test/bench -merge a.json,b.json -out merged.json -markdown merged.md
package main
