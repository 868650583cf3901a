package kubectlecho

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chartvalues"
)

func newRollbackCommand(connect func() (*env, error)) *cobra.Command {
	var (
		revision    int
		dryRun, yes bool
		wait        *waitFlags
	)
	cmd := &cobra.Command{
		Use:   "rollback NAME --to-revision N",
		Short: "Set an Echo's spec back to the values of an earlier release revision",
		Long: "Set the fields of an Echo's spec whose values differ between the deployed release revision and revision N " +
			"(kubectl echo history NAME lists them) to what renders revision N's values; the operator then renders a new revision. " +
			"It asks for confirmation unless --yes; --dry-run has the API server check the change and writes nothing; " +
			"--wait waits until the Echo is Ready with the rolled-back spec.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(connect, echoNames),
		RunE: func(_ *cobra.Command, args []string) error {
			if dryRun && wait.wait {
				return errors.New("--dry-run writes nothing, so there is nothing to --wait for")
			}
			return run(connect, func(ctx context.Context, e *env) error { return e.rollback(ctx, args[0], revision, dryRun, yes, wait) })
		},
	}
	cmd.Flags().IntVar(&revision, "to-revision", 0, "the revision to roll back to")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the change and have the API server check it, and write nothing")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	_ = cmd.MarkFlagRequired("to-revision")
	wait = addWaitFlags(cmd, "the Echo is Ready with the rolled-back spec")
	return cmd
}

func (e *env) rollback(ctx context.Context, name string, revision int, dryRun, yes bool, wait *waitFlags) error {
	echo := &echov1alpha1.Echo{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, echo); err != nil {
		return err
	}
	revisions, err := e.revisions(ctx, name)
	if err != nil {
		return err
	}
	if len(revisions) == 0 {
		return fmt.Errorf("no release revision of Echo %s in namespace %s", name, e.namespace)
	}
	target, err := e.revisionValues(ctx, name, revision)
	if err != nil {
		return err
	}
	deployed, err := e.revisionValues(ctx, name, revisions[len(revisions)-1].Revision)
	if err != nil {
		return err
	}
	spec, err := rollbackSpec(echo.Spec, target, deployed)
	if err != nil {
		return err
	}
	changes := specChanges(echo.Spec, spec)
	if len(changes) == 0 {
		e.printf("Echo %s already renders the values of revision %d: nothing to do\n", name, revision)
		return nil
	}
	e.printf("Rolling Echo %s back to the values of revision %d changes:\n", name, revision)
	for _, c := range changes {
		e.printf("  %s\n", c)
	}
	var opts []client.UpdateOption
	switch {
	case dryRun:
		opts = append(opts, client.DryRunAll)
	case !yes && !e.confirm(fmt.Sprintf("Roll Echo %s back to revision %d?", name, revision)):
		return fmt.Errorf("not confirmed: Echo %s left as it is", name)
	}
	echo.Spec = spec
	if err := e.client.Update(ctx, echo, opts...); err != nil {
		return err
	}
	if dryRun {
		e.printf("The API server accepts the change (dry run): nothing was written\n")
		return nil
	}
	e.printf("Echo %s rolled back to the values of revision %d; the operator renders them as a new revision: kubectl echo history %s\n", name, revision, name)
	if !wait.wait {
		return nil
	}
	if err := e.waitEchoReady(ctx, wait, echo, echo.Generation); err != nil {
		return err
	}
	e.printf("Echo %s is Ready at generation %d\n", name, echo.Status.ObservedGeneration)
	return nil
}

// revisionValues reads the chart values revision n of the Echo's release
// was rendered with.
func (e *env) revisionValues(ctx context.Context, name string, n int) (chartvalues.Values, error) {
	var values chartvalues.Values
	r := &livev1alpha1.EchoRevision{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: fmt.Sprintf("%s.v%d", name, n)}, r); err != nil {
		return values, fmt.Errorf("reading revision %d of Echo %s (kubectl echo history %s lists them): %w", n, name, name, err)
	}
	if r.Values == nil || len(r.Values.Raw) == 0 {
		return values, fmt.Errorf("revision %d of Echo %s records no values", n, name)
	}
	if err := json.Unmarshal(r.Values.Raw, &values); err != nil {
		return values, fmt.Errorf("reading the values of revision %d of Echo %s: %w", n, name, err)
	}
	return values, nil
}

// rollbackSpec is current with each field whose chart values differ
// between the deployed revision and the target one set to what renders the
// target's (chartvalues.Values.Spec): fields that render alike, and the
// backup policy, which no revision records, stay as they are.
func rollbackSpec(current echov1alpha1.EchoSpec, target, deployed chartvalues.Values) (echov1alpha1.EchoSpec, error) {
	want, err := jsonFields(target.Spec())
	if err != nil {
		return current, err
	}
	targetValues, err := jsonFields(target)
	if err != nil {
		return current, err
	}
	deployedValues, err := jsonFields(deployed)
	if err != nil {
		return current, err
	}
	spec, err := jsonFields(current)
	if err != nil {
		return current, err
	}
	for _, field := range specFields {
		if reflect.DeepEqual(targetValues[field], deployedValues[field]) {
			continue
		}
		if v, ok := want[field]; ok {
			spec[field] = v
		} else {
			delete(spec, field)
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return current, err
	}
	var out echov1alpha1.EchoSpec
	return out, json.Unmarshal(raw, &out)
}

// jsonFields is v's JSON object, field by field.
func jsonFields(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	fields := map[string]any{}
	return fields, json.Unmarshal(raw, &fields)
}

// confirm asks a yes-or-no question on the streams; only y or yes agrees.
func (e *env) confirm(question string) bool {
	e.printf("%s [y/N] ", question)
	answer, _ := bufio.NewReader(e.streams.In).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	return answer == "y" || answer == "yes"
}

// specChanges lists, as "field: old -> new", the spec fields that differ
// between two specs, in the order of the spec.
func specChanges(from, to echov1alpha1.EchoSpec) []string {
	a, errA := jsonFields(from)
	b, errB := jsonFields(to)
	if errA != nil || errB != nil {
		return []string{"(the specs do not encode)"}
	}
	var changes []string
	for _, field := range specFields {
		if !reflect.DeepEqual(a[field], b[field]) {
			changes = append(changes, fmt.Sprintf("%s: %s -> %s", field, shown(a[field]), shown(b[field])))
		}
	}
	return changes
}

// specFields are the spec's JSON field names, in the order of the spec.
var specFields = func() []string {
	var fields []string
	t := reflect.TypeFor[echov1alpha1.EchoSpec]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	return fields
}()

func shown(v any) string {
	if v == nil {
		return "(unset)"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}
