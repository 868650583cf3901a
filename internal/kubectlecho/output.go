package kubectlecho

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// wideOutput is the -o of the human output with more columns.
const wideOutput = "wide"

// outputFlags are a command's -o and kubectl's template flags: the human
// output by default (and, where the command has one, with -o wide), or
// the objects through cli-runtime's printers (json, yaml, name, jsonpath,
// go-template), as kubectl prints them.
type outputFlags struct {
	print *genericclioptions.PrintFlags
	wide  bool // whether -o wide is one of the formats
}

// addOutputFlags adds -o to cmd; wide says whether -o wide is one of
// its formats. -o name prints kind.group/name alone, as kubectl create
// -o name does.
func addOutputFlags(cmd *cobra.Command, wide bool) *outputFlags {
	o := newOutputFlags(wide)
	o.print.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format. One of: (" + strings.Join(o.formats(), ", ") + "). The default is the text for people"
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats(), cobra.ShellCompDirectiveNoFileComp))
	return o
}

func newOutputFlags(wide bool) *outputFlags {
	return &outputFlags{print: genericclioptions.NewPrintFlags(""), wide: wide}
}

// formats are the -o values the command takes.
func (o *outputFlags) formats() []string {
	formats := o.print.AllowedFormats()
	if o.wide {
		formats = append([]string{wideOutput}, formats...)
	}
	return formats
}

func (o *outputFlags) format() string { return *o.print.OutputFormat }

// human reports whether the command prints its text for people.
func (o *outputFlags) human() bool {
	return o.format() == "" || (o.wide && o.format() == wideOutput)
}

// isWide reports whether -o wide asked for more columns.
func (o *outputFlags) isWide() bool { return o.wide && o.format() == wideOutput }

// validate refuses an -o the command cannot print, before the command
// does anything.
func (o *outputFlags) validate() error {
	if o.human() {
		return nil
	}
	if _, err := o.print.ToPrinter(); err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return fmt.Errorf("-o %s: not an output format of this command; it prints one of: %s", o.format(), strings.Join(o.formats(), ", "))
		}
		return err
	}
	return nil
}

// printObject prints obj as -o says, with its apiVersion and kind set.
func (e *env) printObject(o *outputFlags, obj client.Object) error {
	if err := e.setKind(obj); err != nil {
		return err
	}
	return e.printRuntime(o, obj)
}

// printList prints objects as kubectl prints a list: a v1 List whose
// items have their apiVersion and kind (-o json, yaml), or one name a line
// (-o name).
func (e *env) printList(o *outputFlags, objects []client.Object) error {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}}}
	for _, obj := range objects {
		if err := e.setKind(obj); err != nil {
			return err
		}
		fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("printing %s: %w", obj.GetName(), err)
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: fields})
	}
	return e.printRuntime(o, list)
}

// setKind sets obj's apiVersion and kind, which typed objects read through
// the client do not carry.
func (e *env) setKind(obj runtime.Object) error {
	gvk, err := apiutil.GVKForObject(obj, e.client.Scheme())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

func (e *env) printRuntime(o *outputFlags, obj runtime.Object) error {
	format := o.format()
	if format != "json" && format != "yaml" {
		p, err := o.print.ToPrinter()
		if err != nil {
			return err
		}
		return p.PrintObj(obj, e.streams.Out)
	}
	// JSON and YAML are text for terminals too. In JSON, the characters
	// encoding/json leaves as they are (DEL, the C1 controls, the
	// bidirectional marks) are escaped as \u sequences, which read back
	// alike. YAML is made from that JSON: its emitter escapes the control
	// characters in double-quoted strings, and no control character stops
	// it (as it stops kubectl's -o yaml).
	jsonFlags := *o.print
	jsonFormat := "json"
	jsonFlags.OutputFormat = &jsonFormat
	p, err := jsonFlags.ToPrinter()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := p.PrintObj(obj, &buf); err != nil {
		return err
	}
	text := []byte(jsonTerminalSafe(buf.String()))
	if format == "yaml" {
		if text, err = yaml.JSONToYAML(text); err != nil {
			return err
		}
	}
	_, err = e.streams.Out.Write(text)
	return err
}

// jsonTerminalSafe escapes in the JSON text s every character that
// terminalSafe would, but for the whitespace between JSON tokens: within
// strings, encoding/json has escaped the control characters below 0x20
// already, so any line break or tab left is outside them.
func jsonTerminalSafe(s string) string {
	if !needsEscaping(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '\n' || r == '\t' || r == '\r' || !unsafeRune(r):
			b.WriteString(s[i : i+size])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// objects is a typed list's items as client.Objects.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}
