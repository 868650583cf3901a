//go:build linux

package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log"
	"reflect"
	"slices"
	"strings"
	"time"
)

// parseMergeFlags checks the command line of -merge, which runs nothing:
// besides the files it takes -markdown, and -out, which it needs so as not
// to overwrite the default results file by mistake.
func parseMergeFlags(fs *flag.FlagSet, o options, files string) (options, error) {
	var others []string
	outSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "merge", "markdown":
		case "out":
			outSet = true
		default:
			others = append(others, "-"+f.Name)
		}
	})
	if fs.NArg() > 0 {
		return o, fmt.Errorf("-merge: unexpected arguments %q (separate the files with commas, and put the flags first)", fs.Args())
	}
	if len(others) > 0 {
		return o, fmt.Errorf("-merge runs nothing, so it takes no %s", strings.Join(others, ", "))
	}
	if !outSet {
		return o, errors.New("-merge needs -out")
	}
	for _, f := range strings.Split(files, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.merge = append(o.merge, f)
		}
	}
	if len(o.merge) == 0 {
		return o, errors.New("-merge: no files")
	}
	return o, nil
}

// mergeFiles merges the results files of -merge, and writes the merged
// results and their Markdown as a run would. args is the command line.
func mergeFiles(o options, args []string) error {
	inputs := make([]*results, 0, len(o.merge))
	for _, p := range o.merge {
		r, err := readResults(p)
		if err != nil {
			return err
		}
		inputs = append(inputs, r)
	}
	return writeReport(mergeResults(o.merge, inputs, args), o.out, o.markdown)
}

// mergeResults merges the results read from files, in order. A later
// file's run replaces an earlier one of the same system and N. Machine and
// Versions are the first file's; each file is kept as a source, with its
// own settings. A merged file contributes its sources rather than itself,
// so that merges merge.
func mergeResults(files []string, inputs []*results, args []string) *results {
	res := &results{Args: args, Machine: inputs[0].Machine, Versions: inputs[0].Versions}
	kept := map[runKey]*runResult{}
	for i, in := range inputs {
		if len(in.Sources) > 0 {
			for _, s := range in.Sources {
				c := *s
				res.Sources = append(res.Sources, &c)
			}
		} else {
			res.Sources = append(res.Sources, &source{
				File: files[i], Args: in.Args, Started: in.Started, Finished: in.Finished,
				Machine: in.Machine, Versions: in.Versions, Settings: in.Settings,
			})
		}
		for _, r := range in.Runs {
			if r == nil {
				continue
			}
			if len(in.Sources) == 0 {
				r.Source = files[i]
			}
			k := runKey{System: r.System, N: r.N}
			if old := kept[k]; old != nil {
				log.Printf("%s at N=%d: the run of %s replaces that of %s", r.System, r.N, r.Source, old.Source)
			}
			kept[k] = r
		}
	}
	// A file merged twice is one source, the last.
	var sources []*source
	for i, s := range res.Sources {
		if !slices.ContainsFunc(res.Sources[i+1:], func(t *source) bool { return t.File == s.File }) {
			sources = append(sources, s)
		}
	}
	res.Sources = sources
	for _, r := range kept {
		res.Runs = append(res.Runs, r)
	}
	slices.SortFunc(res.Runs, func(a, b *runResult) int {
		return cmp.Or(cmp.Compare(a.N, b.N), cmp.Compare(systemRank(a.System), systemRank(b.System)), strings.Compare(a.System, b.System))
	})
	used := assignRuns(res)
	res.Settings = mergeSettings(used, res.Runs)
	res.Started, res.Finished = mergedTimes(res)
	for _, s := range used {
		if machineSummary(s.Machine) != machineSummary(res.Machine) || versionSummary(s.Versions) != versionSummary(res.Versions) {
			log.Printf("%s ran on another machine or other versions than %s", s.File, res.Sources[0].File)
		}
	}
	return res
}

// systemRank orders the systems as the report does, unknown ones last.
func systemRank(s string) int {
	if i := slices.Index(allSystems, s); i >= 0 {
		return i
	}
	return len(allSystems)
}

// assignRuns lists each source's runs, and returns the sources of runs:
// all of them when no run has a source.
func assignRuns(res *results) []*source {
	for _, s := range res.Sources {
		s.Runs = []runKey{}
	}
	for _, r := range res.Runs {
		if s := sourceOf(res, r); s != nil {
			s.Runs = append(s.Runs, runKey{System: r.System, N: r.N})
		}
	}
	var used []*source
	for _, s := range res.Sources {
		if len(s.Runs) > 0 {
			used = append(used, s)
		}
	}
	if len(used) == 0 {
		return res.Sources
	}
	return used
}

// sourceOf returns the source of a run of a merged file, or nil.
func sourceOf(res *results, r *runResult) *source {
	for _, s := range res.Sources {
		if s.File == r.Source {
			return s
		}
	}
	return nil
}

// mergeSettings returns the settings of the sources: the first one's, less
// those the others differ on, with every N and system of the sources and
// the runs.
func mergeSettings(sources []*source, runs []*runResult) settings {
	out := sources[0].Settings
	v := reflect.ValueOf(&out).Elem()
	for _, s := range sources[1:] {
		o := reflect.ValueOf(s.Settings)
		for i := range v.NumField() {
			if !reflect.DeepEqual(v.Field(i).Interface(), o.Field(i).Interface()) {
				v.Field(i).SetZero()
			}
		}
	}
	var ns []int
	var systems []string
	for _, s := range sources {
		ns = append(ns, s.Settings.N...)
		systems = append(systems, s.Settings.Systems...)
	}
	for _, r := range runs {
		ns = append(ns, r.N)
		systems = append(systems, r.System)
	}
	slices.Sort(ns)
	out.N = slices.Compact(ns)
	slices.SortFunc(systems, func(a, b string) int {
		return cmp.Or(cmp.Compare(systemRank(a), systemRank(b)), strings.Compare(a, b))
	})
	out.Systems = slices.Compact(systems)
	return out
}

// mergedTimes spans the sources: from the first start to the last finish
// or end of a run.
func mergedTimes(res *results) (started, finished time.Time) {
	for _, s := range res.Sources {
		if !s.Started.IsZero() && (started.IsZero() || s.Started.Before(started)) {
			started = s.Started
		}
		if s.Finished.After(finished) {
			finished = s.Finished
		}
	}
	for _, r := range res.Runs {
		if end := r.Started.Add(time.Duration(r.Seconds * float64(time.Second))); !r.Started.IsZero() && end.After(finished) {
			finished = end
		}
	}
	return started, finished
}

// The Markdown of merged results.

// command is the command line of args.
func command(args []string) string {
	return "`" + strings.Join(append([]string{"go run ./test/bench"}, args...), " ") + "`"
}

// windows describes the windows of settings.
func windows(s settings) string {
	return fmt.Sprintf("baseline %.0fs, idle %.0fs (after %.0fs settling), %d client workers", s.BaselineSeconds, s.IdleSeconds, s.SettleSeconds, s.Workers)
}

func machineSummary(m machineInfo) string {
	return fmt.Sprintf("%s, %d cores, %.1f GiB, Linux %s, %s", m.CPU, m.Cores, float64(m.MemoryBytes)/(1<<30), m.Kernel, m.Go)
}

func versionSummary(v versionInfo) string {
	return fmt.Sprintf("echo-operator %s; helm-operator-plugins %s; %s", v.EchoOperator, v.HelmOperatorPlugins, v.KubeAPIServer)
}

// sourceDetails describes a source's settings, and its machine and
// versions where they differ from the header's.
func sourceDetails(res *results, s *source) string {
	d := windows(s.Settings)
	if m := machineSummary(s.Machine); m != machineSummary(res.Machine) {
		d += "; machine: " + m
	}
	if v := versionSummary(s.Versions); v != versionSummary(res.Versions) {
		d += "; " + v
	}
	return d
}

// uniformSources tells whether the sources of the runs share their
// details.
func uniformSources(res *results) bool {
	var first string
	for _, s := range res.Sources {
		if len(s.Runs) == 0 {
			continue
		}
		if d := sourceDetails(res, s); first == "" {
			first = d
		} else if d != first {
			return false
		}
	}
	return true
}

// writeSourcesHeader writes the settings and command lines of the header of
// merged results: each source's command, runs kept and settings.
func writeSourcesHeader(b *strings.Builder, res *results) {
	if uniformSources(res) {
		for _, s := range res.Sources {
			if len(s.Runs) > 0 {
				w := windows(s.Settings)
				fmt.Fprintf(b, "- %s%s\n", strings.ToUpper(w[:1]), w[1:])
				break
			}
		}
	} else {
		b.WriteString("- Settings differ between the sources: see each command below and each N\n")
	}
	fmt.Fprintf(b, "- Commands, merged by %s:\n", command(res.Args))
	for _, s := range res.Sources {
		fmt.Fprintf(b, "  - %s (`%s`, started %s): %s; %s\n", command(s.Args), s.File,
			s.Started.UTC().Format("2006-01-02 15:04 MST"), keptRuns(s.Runs), sourceDetails(res, s))
	}
}

// keptRuns describes the runs kept from a source.
func keptRuns(keys []runKey) string {
	if len(keys) == 0 {
		return "no runs kept (replaced by later files')"
	}
	var parts []string
	for i := 0; i < len(keys); {
		j := i
		var systems []string
		for ; j < len(keys) && keys[j].N == keys[i].N; j++ {
			systems = append(systems, keys[j].System)
		}
		parts = append(parts, fmt.Sprintf("%s at N=%d", strings.Join(systems, ", "), keys[i].N))
		i = j
	}
	return "runs " + strings.Join(parts, "; ")
}

// writeRunSources tells, when the sources of merged results differ, which
// settings each run at an N had.
func writeRunSources(b *strings.Builder, res *results, runs map[string]*runResult) {
	if len(res.Sources) == 0 || uniformSources(res) {
		return
	}
	var details []string
	systems := map[string][]string{}
	for _, s := range allSystems {
		r := runs[s]
		if r == nil {
			continue
		}
		d := "settings unknown"
		if src := sourceOf(res, r); src != nil {
			d = fmt.Sprintf("%s (`%s`)", sourceDetails(res, src), src.File)
		}
		if systems[d] == nil {
			details = append(details, d)
		}
		systems[d] = append(systems[d], s)
	}
	b.WriteString("Settings of these runs (the sources differ; each run's per-minute figures are over its own windows):\n\n")
	for _, d := range details {
		fmt.Fprintf(b, "- %s: %s\n", strings.Join(systems[d], ", "), d)
	}
	b.WriteString("\n")
}
