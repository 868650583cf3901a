//go:build linux

package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

const mib = 1 << 20

// metric is one row of the main table: how to read it from a run and how
// to print it.
type metric struct {
	label string
	value func(*runResult) (float64, bool)
	// format prints a value; ratios use fixed two decimals.
	format func(float64) string
}

func seconds(v float64) string { return fmt.Sprintf("%.2f", v) }
func count(v float64) string   { return fmt.Sprintf("%.0f", v) }
func mebibytes(v float64) string {
	return fmt.Sprintf("%.1f", v/mib)
}

// The accessors of the measurements a run may lack.
func rollout(r *runResult) *convergence     { return r.Rollout }
func echoReadyOf(r *runResult) *convergence { return r.EchoReady }
func updateOf(r *runResult) *convergence    { return r.Update }

// convergenceMetric reads a field of a complete convergence: the times of
// one cut short are in the JSON only.
func convergenceMetric(label string, of func(*runResult) *convergence, field func(*convergence) float64) metric {
	return metric{label: label, format: seconds, value: func(r *runResult) (float64, bool) {
		c := of(r)
		if c == nil || c.Reached < c.Want {
			return 0, false
		}
		return field(c), true
	}}
}

func allSeconds(c *convergence) float64 { return c.AllSeconds }
func p50(c *convergence) float64        { return c.P50Seconds }
func p99(c *convergence) float64        { return c.P99Seconds }

func windowMetric(label string, of func(*runResult) *requestWindow, field func(*requestWindow) float64) metric {
	return metric{label: label, format: count, value: func(r *runResult) (float64, bool) {
		w := of(r)
		if w == nil {
			return 0, false
		}
		return field(w), true
	}}
}

func rolloutRequests(r *runResult) *requestWindow { return r.RolloutRequests }
func updateRequests(r *runResult) *requestWindow  { return r.UpdateRequests }

func processMetric(label string, format func(float64) string, field func(*processResult) float64) metric {
	return metric{label: label, format: format, value: func(r *runResult) (float64, bool) {
		if r.Process == nil {
			return 0, false
		}
		return field(r.Process), true
	}}
}

func idleMetric(label string, field func(*idleResult) float64) metric {
	return metric{label: label, format: count, value: func(r *runResult) (float64, bool) {
		if r.Idle == nil {
			return 0, false
		}
		return field(r.Idle), true
	}}
}

// peakRSS is the kernel's peak RSS of the operator's first life.
func peakRSS(p *processResult) float64 {
	return float64(max(p.Total.HWMBytes, p.Update.HWMBytes, p.Idle.HWMBytes, p.Rollout.HWMBytes))
}

// peakHeap is the highest Go heap in use scraped in any phase.
func peakHeap(p *processResult) float64 {
	return max(p.Rollout.PeakHeapInuseBytes, p.Idle.PeakHeapInuseBytes, p.Update.PeakHeapInuseBytes, p.Total.PeakHeapInuseBytes)
}

// The metrics the ratios table compares.
var (
	allAvailableMetric = convergenceMetric("Rollout: first create → all Available (s)", rollout, allSeconds)
	p99AvailableMetric = convergenceMetric("Rollout: create → Available p99 (s)", rollout, p99)
	idleNetMetric      = idleMetric("Idle: API requests/min, net of baseline", func(i *idleResult) float64 { return i.NetMean })
	peakRSSMetric      = processMetric("Operator peak RSS (MiB)", mebibytes, peakRSS)
)

// mainMetrics are the rows of each N's main table.
var mainMetrics = []metric{
	allAvailableMetric,
	convergenceMetric("Rollout: create → Available p50 (s)", rollout, p50),
	p99AvailableMetric,
	convergenceMetric("Rollout: first create → all Echos Ready (s)", echoReadyOf, allSeconds),
	windowMetric("Rollout: API requests, net of baseline", rolloutRequests, func(w *requestWindow) float64 { return w.Net }),
	windowMetric("Rollout: API writes, net of baseline", rolloutRequests, func(w *requestWindow) float64 { return w.NetWrites }),
	windowMetric("Rollout: requests sent by the operator / client", rolloutRequests, (*requestWindow).sent),
	convergenceMetric("Update: first patch → all rolled out (s)", updateOf, allSeconds),
	convergenceMetric("Update: patch → rolled out p50 (s)", updateOf, p50),
	convergenceMetric("Update: patch → rolled out p99 (s)", updateOf, p99),
	windowMetric("Update: API requests, net of baseline", updateRequests, func(w *requestWindow) float64 { return w.Net }),
	idleNetMetric,
	idleMetric("Idle: requests/min sent by the operator / client", func(i *idleResult) float64 { return i.ClientPerMinute }),
	peakRSSMetric,
	processMetric("Operator RSS at the end of idle (MiB)", mebibytes, func(p *processResult) float64 { return float64(p.Idle.EndRSSBytes) }),
	processMetric("Operator peak Go heap in use (MiB)", mebibytes, peakHeap),
	processMetric("Operator Go heap in use at the end of idle (MiB)", mebibytes, func(p *processResult) float64 { return p.Idle.EndHeapInuseBytes }),
	processMetric("Operator CPU, rollout (s)", seconds, func(p *processResult) float64 { return p.Rollout.CPUSeconds }),
	processMetric("Operator CPU, idle (s)", seconds, func(p *processResult) float64 { return p.Idle.CPUSeconds }),
	processMetric("Operator CPU, update (s)", seconds, func(p *processResult) float64 { return p.Update.CPUSeconds }),
	{label: "Operator start → ready (s)", format: seconds, value: func(r *runResult) (float64, bool) {
		return r.OperatorReadySeconds, r.Process != nil
	}},
}

// ratioMetric is a column of the ratios table: num÷den of one metric.
type ratioMetric struct {
	label    string
	metric   metric
	num, den string
}

var ratioMetrics = []ratioMetric{
	{"echo÷stock all Available", allAvailableMetric, systemEcho, systemStock},
	{"echo÷floor all Available", allAvailableMetric, systemEcho, systemFloor},
	{"echo÷stock p99", p99AvailableMetric, systemEcho, systemStock},
	{"echo÷floor p99", p99AvailableMetric, systemEcho, systemFloor},
	{"stock÷echo idle req/min (net)", idleNetMetric, systemStock, systemEcho},
	{"stock÷echo peak RSS", peakRSSMetric, systemStock, systemEcho},
}

// table is a Markdown table under construction.
type table struct{ b *strings.Builder }

func (t table) row(cells ...string) {
	t.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// header writes the header row and the alignment row: the first column
// left-aligned, the others right-aligned.
func (t table) header(cells ...string) {
	t.row(cells...)
	align := make([]string, len(cells))
	for i := range align {
		align[i] = "---:"
	}
	align[0] = "---"
	t.row(align...)
}

// markdown renders the results as Markdown.
func markdown(res *results) string {
	var b strings.Builder
	writeHeader(&b, res)
	for _, n := range res.Settings.N {
		runs := runsAt(res, n)
		if len(runs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## N = %d\n\n", n)
		writeRunSources(&b, res, runs)
		writeMainTable(&b, runs)
		writeIdleTable(&b, runs)
		writeRequestTable(&b, "API requests during the rollout, net of baseline", runs, func(r *runResult) ([]requestRow, bool) {
			if r.RolloutRequests == nil {
				return nil, false
			}
			return r.RolloutRequests.Top, true
		})
		writeRequestTable(&b, "API requests per minute while idle, net of baseline", runs, func(r *runResult) ([]requestRow, bool) {
			if r.Idle == nil {
				return nil, false
			}
			return r.Idle.Rows, true
		})
		writeClientKindsTable(&b, runs[systemEcho])
		writeStartupTable(&b, runs)
		writeUpgradeTable(&b, runs)
	}
	writeRatioTable(&b, res)
	return b.String()
}

func writeHeader(b *strings.Builder, res *results) {
	b.WriteString("# Scale benchmark\n\n")
	fmt.Fprintf(b, "- Machine: %s\n", machineSummary(res.Machine))
	fmt.Fprintf(b, "- %s\n", versionSummary(res.Versions))
	if len(res.Sources) > 0 {
		writeSourcesHeader(b, res)
		return
	}
	s := res.Settings
	fmt.Fprintf(b, "- Baseline %.0fs, idle %.0fs (after %.0fs settling), %d client workers\n", s.BaselineSeconds, s.IdleSeconds, s.SettleSeconds, s.Workers)
	fmt.Fprintf(b, "- Command: %s\n", command(res.Args))
}

// runsAt returns the runs at n by system.
func runsAt(res *results, n int) map[string]*runResult {
	out := map[string]*runResult{}
	for _, r := range res.Runs {
		if r.N == n {
			out[r.System] = r
		}
	}
	return out
}

// cell prints a metric of the run of system, or "–" when there is none.
func cell(m metric, runs map[string]*runResult, system string) string {
	r := runs[system]
	if r == nil {
		return "–"
	}
	v, ok := m.value(r)
	if !ok {
		return "–"
	}
	return m.format(v)
}

// ratioCell prints num÷den of a metric, or "–" when either is missing or
// not positive.
func ratioCell(m metric, runs map[string]*runResult, num, den string) string {
	a, okA := metricValue(m, runs[num])
	b, okB := metricValue(m, runs[den])
	if q := ratio(a, b); okA && okB && q > 0 {
		return fmt.Sprintf("%.2f", q)
	}
	return "–"
}

func metricValue(m metric, r *runResult) (float64, bool) {
	if r == nil {
		return 0, false
	}
	return m.value(r)
}

func writeMainTable(b *strings.Builder, runs map[string]*runResult) {
	t := table{b}
	t.header("Metric", systemEcho, systemStock, systemFloor, "echo÷stock", "echo÷floor")
	status := []string{"Status"}
	for _, s := range allSystems {
		status = append(status, runStatus(runs[s]))
	}
	t.row(append(status, "", "")...)
	for _, m := range mainMetrics {
		t.row(m.label, cell(m, runs, systemEcho), cell(m, runs, systemStock), cell(m, runs, systemFloor),
			ratioCell(m, runs, systemEcho, systemStock), ratioCell(m, runs, systemEcho, systemFloor))
	}
}

// runStatus is "ok", or what stopped the run.
func runStatus(r *runResult) string {
	switch {
	case r == nil:
		return "not run"
	case r.TimedOutPhase != "":
		return "timed out in " + r.TimedOutPhase + reachedNote(r)
	case r.Error != "":
		return "failed (see JSON)"
	}
	return "ok"
}

// reachedNote tells how far the rollout or update got.
func reachedNote(r *runResult) string {
	for _, c := range []*convergence{r.Update, r.Rollout} {
		if c != nil && c.TimedOut {
			return fmt.Sprintf(" (%d/%d)", c.Reached, c.Want)
		}
	}
	return ""
}

func writeIdleTable(b *strings.Builder, runs map[string]*runResult) {
	minutes := 0
	for _, r := range runs {
		if r.Idle != nil {
			minutes = max(minutes, len(r.Idle.Minutes))
		}
	}
	if minutes == 0 {
		return
	}
	b.WriteString("\nkube-apiserver requests per minute while idle (all clients):\n\n")
	t := table{b}
	head := []string{"System"}
	for i := range minutes {
		head = append(head, fmt.Sprintf("min %d", i+1))
	}
	t.header(append(head, "mean", "baseline", "net mean", "operator / client")...)
	for _, s := range allSystems {
		r := runs[s]
		if r == nil || r.Idle == nil {
			continue
		}
		cells := []string{s}
		for i := range minutes {
			if i < len(r.Idle.Minutes) {
				cells = append(cells, count(r.Idle.Minutes[i]))
			} else {
				cells = append(cells, "–")
			}
		}
		t.row(append(cells, count(r.Idle.Mean), count(r.Idle.BaselinePerMinute), count(r.Idle.NetMean), count(r.Idle.ClientPerMinute))...)
	}
}

// writeRequestTable tabulates the net counts of the kinds of requests in
// any system's top rows, by decreasing largest count. A cell is "–" for a
// system without the measurement, "·" for a kind not in its top rows.
func writeRequestTable(b *strings.Builder, title string, runs map[string]*runResult, rowsOf func(*runResult) ([]requestRow, bool)) {
	net := map[string]map[string]float64{}
	peak := map[string]float64{}
	measured := map[string]bool{}
	for s, r := range runs {
		rs, ok := rowsOf(r)
		measured[s] = ok
		for _, row := range rs {
			if net[row.Request] == nil {
				net[row.Request] = map[string]float64{}
			}
			net[row.Request][s] = row.Net
			peak[row.Request] = max(peak[row.Request], row.Net)
		}
	}
	if len(net) == 0 {
		return
	}
	requests := make([]string, 0, len(net))
	for k := range net {
		requests = append(requests, k)
	}
	slices.SortFunc(requests, func(a, b string) int {
		if c := cmp.Compare(peak[b], peak[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintf(b, "\n%s:\n\n", title)
	t := table{b}
	t.header("Request", systemEcho, systemStock, systemFloor)
	for _, req := range requests {
		cells := []string{"`" + req + "`"}
		for _, s := range allSystems {
			v, ok := net[req][s]
			switch {
			case !measured[s]:
				cells = append(cells, "–")
			case !ok:
				cells = append(cells, "·")
			default:
				cells = append(cells, count(v))
			}
		}
		t.row(cells...)
	}
}

// writeClientKindsTable lists echo-operator's own requests by kind,
// during the rollout and the mass update, in all and per Echo.
func writeClientKindsTable(b *strings.Builder, r *runResult) {
	if r == nil || r.RolloutRequests == nil || len(r.RolloutRequests.ClientKinds) == 0 {
		return
	}
	update := map[string]float64{}
	if r.UpdateRequests != nil {
		for _, row := range r.UpdateRequests.ClientKinds {
			update[row.Request] = row.Net
		}
	}
	perEcho := func(v float64) string { return fmt.Sprintf("%.2f", v/float64(r.N)) }
	fmt.Fprintf(b, "\nRequests sent by echo-operator, by kind (its own count):\n\n")
	t := table{b}
	t.header("Request", "rollout", "per Echo", "update", "per Echo")
	var rollout, upd float64
	for _, row := range r.RolloutRequests.ClientKinds {
		t.row("`"+row.Request+"`", count(row.Net), perEcho(row.Net), count(update[row.Request]), perEcho(update[row.Request]))
		rollout += row.Net
		upd += update[row.Request]
		delete(update, row.Request)
	}
	for _, req := range slices.Sorted(maps.Keys(update)) {
		t.row("`"+req+"`", "·", "·", count(update[req]), perEcho(update[req]))
		upd += update[req]
	}
	t.row("all", count(rollout), perEcho(rollout), count(upd), perEcho(upd))
}

func writeStartupTable(b *strings.Builder, runs map[string]*runResult) {
	r := runs[systemEcho]
	if r == nil || r.Startup == nil {
		return
	}
	s := r.Startup
	unchanged := "yes"
	if !s.ReleasesUnchanged {
		unchanged = fmt.Sprintf("no: %d changed", len(s.ReleaseChanges))
	}
	b.WriteString("\necho-operator restarted on the converged Echos:\n\n")
	t := table{b}
	t.header("Restart", "value")
	t.row("Start → ready (s)", seconds(s.ReadySeconds))
	t.row(fmt.Sprintf("Start → %d reconciles of %s (s)", r.N, echoController), seconds(s.ReconciledSeconds))
	t.row(fmt.Sprintf("Release Secrets unchanged (%d)", s.Releases), unchanged)
	t.row(fmt.Sprintf("Secret writes in the %.0fs window", s.WindowSeconds), count(s.SecretWrites))
	t.row(fmt.Sprintf("Deployment writes in the %.0fs window", s.WindowSeconds), count(s.DeploymentWrites))
	if s.Requests != nil {
		t.row("API requests in the window, net of baseline", count(s.Requests.Net))
		t.row("Requests sent by the operator", count(s.Requests.sent()))
	}
	t.row("Peak RSS (MiB)", mebibytes(float64(s.Process.HWMBytes)))
	t.row("CPU (s)", seconds(s.Process.CPUSeconds))
}

func writeUpgradeTable(b *strings.Builder, runs map[string]*runResult) {
	r := runs[systemEcho]
	if r == nil || len(r.Upgrades) == 0 {
		return
	}
	b.WriteString("\necho-operator upgraded on the converged Echos (a new version started in place of the old):\n\n")
	t := table{b}
	head := []string{"Upgrade"}
	for _, u := range r.Upgrades {
		head = append(head, u.Name)
	}
	t.header(head...)
	row := func(label string, f func(*upgradeResult) string) {
		cells := []string{label}
		for _, u := range r.Upgrades {
			cells = append(cells, f(u))
		}
		t.row(cells...)
	}
	row("Release revisions written", func(u *upgradeResult) string { return fmt.Sprint(u.RevisionsWritten) })
	row("Release records rewritten (same revision)", func(u *upgradeResult) string { return fmt.Sprint(u.RecordsRewritten) })
	row("Deployments rolled out (pods restarted)", func(u *upgradeResult) string { return fmt.Sprint(u.Rollouts) })
	row("Most rollouts at once", func(u *upgradeResult) string { return fmt.Sprint(u.PeakRollouts) })
	row("Start → ready (s)", func(u *upgradeResult) string { return seconds(u.ReadySeconds) })
	row("Start → every release converged, none rolling (s)", func(u *upgradeResult) string {
		if u.TimedOut {
			return fmt.Sprintf("timed out (%d of %d)", u.Converged, r.N)
		}
		return seconds(u.DoneSeconds)
	})
	row("Requests sent by the operator", func(u *upgradeResult) string {
		if u.Requests == nil {
			return "·"
		}
		return count(u.Requests.sent())
	})
	row("API requests in the window, net of baseline", func(u *upgradeResult) string {
		if u.Requests == nil {
			return "·"
		}
		return count(u.Requests.Net)
	})
	row("Secret writes", func(u *upgradeResult) string { return count(u.SecretWrites) })
	row("Deployment writes", func(u *upgradeResult) string { return count(u.DeploymentWrites) })
	row("Peak RSS (MiB)", func(u *upgradeResult) string { return mebibytes(float64(u.Process.HWMBytes)) })
	row("CPU (s)", func(u *upgradeResult) string { return seconds(u.Process.CPUSeconds) })
}

func writeRatioTable(b *strings.Builder, res *results) {
	b.WriteString("\n## Ratios\n\n")
	t := table{b}
	head := []string{"N"}
	for _, rm := range ratioMetrics {
		head = append(head, rm.label)
	}
	t.header(head...)
	for _, n := range res.Settings.N {
		runs := runsAt(res, n)
		cells := []string{fmt.Sprint(n)}
		for _, rm := range ratioMetrics {
			cells = append(cells, ratioCell(rm.metric, runs, rm.num, rm.den))
		}
		t.row(cells...)
	}
}
