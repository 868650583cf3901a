package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// crdDir holds the CustomResourceDefinitions whose columns `kubectl get`
// prints.
const crdDir = "config/crd/bases"

// TestDocumentedGetOutputsMatchTheColumns checks the headers of the
// `kubectl get` outputs README.md and docs/ show, for the operator's own
// kinds, against the printer columns of their CustomResourceDefinitions:
// NAME, then the columns of priority 0, and with -o wide every column,
// upper-cased as kubectl prints them. A header is the first line after
// the command, past blank lines and code fences, that starts with NAME.
func TestDocumentedGetOutputsMatchTheColumns(t *testing.T) {
	fsys := os.DirFS(reporoot.Must(t))
	crds, err := readCRDs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	inDocs, problems := documentedKubectl(fsys)
	checked := 0
	for _, d := range inDocs {
		p, ok, err := checkGetOutput(fsys, crds, d)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if ok {
			checked++
		}
		problems = append(problems, p...)
	}
	if checked < 4 {
		problems = append(problems, fmt.Sprintf("only %d outputs of kubectl get checked: the reader is broken", checked))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// checkGetOutput checks the output shown after d, when d gets a kind of
// crds and the document shows its header; ok says whether it did.
func checkGetOutput(fsys fs.FS, crds []apiextensionsv1.CustomResourceDefinition, d docKubectl) (problems []string, ok bool, err error) {
	if d.cmd.verb != "get" {
		return nil, false, nil
	}
	resources := d.cmd.resources()
	if len(resources) != 1 {
		return nil, false, nil
	}
	crd := crdNamed(crds, resources[0])
	if crd == nil {
		return nil, false, nil
	}
	doc, err := fs.ReadFile(fsys, d.file)
	if err != nil {
		return nil, false, err
	}
	header, ok := headerAfter(strings.Split(string(doc), "\n"), d.line)
	if !ok {
		return nil, false, nil
	}
	want := getColumns(crd, d.cmd.flags)
	if got := splitHeader(header); !slices.Equal(got, want) {
		return []string{fmt.Sprintf("%s: the output shows the columns %s; kubectl prints %s",
			d, strings.Join(got, " | "), strings.Join(want, " | "))}, true, nil
	}
	return nil, true, nil
}

// getColumns is the header kubectl get prints for crd's kind with flags
// (canonical: --output=wide, --all-namespaces).
func getColumns(crd *apiextensionsv1.CustomResourceDefinition, flags []string) []string {
	wide := slices.Contains(flags, "--output=wide")
	var cols []string
	if slices.Contains(flags, "--all-namespaces") {
		cols = append(cols, "NAMESPACE")
	}
	cols = append(cols, "NAME")
	for _, c := range servedVersion(crd).AdditionalPrinterColumns {
		if c.Priority == 0 || wide {
			cols = append(cols, strings.ToUpper(c.Name))
		}
	}
	return cols
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionVersion {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v
		}
	}
	return crd.Spec.Versions[0]
}

// headerAfter finds the header line after line n (1-based): the first line
// past blank lines and code fences, when it starts with NAME.
func headerAfter(lines []string, n int) (string, bool) {
	for _, l := range lines[min(n, len(lines)):] {
		switch trimmed := strings.TrimSpace(l); {
		case trimmed == "" || fenceRe.MatchString(l):
			continue
		case strings.HasPrefix(trimmed, "NAME ") || strings.HasPrefix(trimmed, "NAMESPACE "):
			return trimmed, true
		default:
			return "", false
		}
	}
	return "", false
}

var columnGap = regexp.MustCompile(`\s{2,}`)

// splitHeader splits a header kubectl printed into its columns, which it
// separates by at least two spaces (a column's name may hold one).
func splitHeader(header string) []string {
	return columnGap.Split(strings.TrimSpace(header), -1)
}

// crdNamed finds the definition a resource as written on the command line
// names: its plural, singular, short name or kind, optionally with the
// group.
func crdNamed(crds []apiextensionsv1.CustomResourceDefinition, resource string) *apiextensionsv1.CustomResourceDefinition {
	for i := range crds {
		n := crds[i].Spec.Names
		name, group, _ := strings.Cut(resource, ".")
		if group != "" && !strings.HasPrefix(crds[i].Spec.Group, group) {
			continue
		}
		if name == n.Plural || name == n.Singular || strings.EqualFold(name, n.Kind) || slices.Contains(n.ShortNames, name) {
			return &crds[i]
		}
	}
	return nil
}

// readCRDs reads every definition of crdDir.
func readCRDs(fsys fs.FS) ([]apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(fsys, crdDir)
	if err != nil {
		return nil, err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		raw, err := fs.ReadFile(fsys, crdDir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		decoded, err := decodeAll[apiextensionsv1.CustomResourceDefinition](raw)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", crdDir, e.Name(), err)
		}
		for _, crd := range decoded {
			if crd.Kind == "CustomResourceDefinition" {
				crds = append(crds, crd)
			}
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", crdDir)
	}
	return crds, nil
}

func TestCheckGetOutput(t *testing.T) {
	crd := apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "echo.dev",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "echobackups", Singular: "echobackup", Kind: "EchoBackup", ShortNames: []string{"ecb"}},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Storage: true, AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Echo"}, {Name: "Phase"}, {Name: "Last Backup", Priority: 1}, {Name: "Age"},
		}}},
	}}
	cases := []struct {
		name, doc   string
		wantChecked bool
		want        []string
	}{
		{"a matching header", "```console\n$ kubectl get echobackups\nNAME   ECHO   PHASE   AGE\nb      web    Completed   1m\n```\n", true, nil},
		{"a short name, -o wide and the output in the next block", "```sh\nkubectl get ecb -o wide\n```\n\n```\nNAME   ECHO   PHASE   LAST BACKUP   AGE\n```\n", true, nil},
		{"all namespaces", "```console\n$ kubectl get echobackups -A\nNAMESPACE   NAME   ECHO   PHASE   AGE\n```\n", true, nil},
		{"a stale header", "```console\n$ kubectl get echobackup web-1\nNAME    ECHO   COMPLETE   AGE\n```\n", true,
			[]string{"doc.md:2: kubectl get echobackup web-1: the output shows the columns NAME | ECHO | COMPLETE | AGE; kubectl prints NAME | ECHO | PHASE | AGE"}},
		{"no output shown", "```console\n$ kubectl get echobackups\n```\nText.\n\nNAME is not a header here.\n", false, nil},
		{"another kind", "```console\n$ kubectl get pods\nNAME   READY\n```\n", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"doc.md": {Data: []byte(tc.doc)}}
			cmds, problems := kubectlInMarkdown("doc.md", tc.doc)
			if len(problems) > 0 || len(cmds) != 1 {
				t.Fatalf("reading the sample: %v, %v", cmds, problems)
			}
			got, checked, err := checkGetOutput(fsys, []apiextensionsv1.CustomResourceDefinition{crd}, cmds[0])
			if err != nil {
				t.Fatal(err)
			}
			if checked != tc.wantChecked || !slices.Equal(got, tc.want) {
				t.Errorf("checkGetOutput = %q, checked %v; want %q, checked %v", got, checked, tc.want, tc.wantChecked)
			}
		})
	}
}
