package olmnode

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runBundleTimeout bounds each operator-sdk command.
const runBundleTimeout = 8 * time.Minute

// TestOperatorSDKRunBundle installs the operator with `operator-sdk run
// bundle`, upgrades it with `run bundle-upgrade` and removes it with
// `cleanup`, with the commands of docs/install.md for a registry whose
// certificate a CA of its own signed: the registry's HTTPS front on the
// node's bridge, which the node and the command trust through that CA (the
// registry pod skips the verification, as the documentation explains). The operator's pods reconcile the sample
// Echo after each step.
func TestOperatorSDKRunBundle(t *testing.T) {
	ctx := context.Background()
	const ns, team = "echo-operator", "team-a"
	explainOnFailure(t, ns, team)
	registry := strings.NewReplacer(
		"registry.example.com/echo/echo-operator-bundle:v0.1.0", front.Host+"/"+org+"/echo-operator-bundle:v"+previousVersion,
		"registry.example.com/echo/echo-operator-bundle:v0.2.0", front.Host+"/"+org+"/echo-operator-bundle:v"+currentVersion,
		"registry.example.com/operator-framework/opm:", front.Host+"/operator-framework/opm:")
	commands := docShellCommands(t, "--index-image registry.example.com/")
	if len(commands) != 3 {
		t.Fatalf("%s's commands for a registry of a CA of its own are not the four this test runs: %q", installDoc, commands)
	}
	runDocumented(t, documented("create", "namespace", "echo-operator"))
	sdk := func(command string) {
		t.Helper()
		args := strings.Fields(registry.Replace(command))
		if args[0] != "SSL_CERT_FILE=ca.pem" || args[1] != "$OPERATOR_SDK" {
			t.Fatalf("%s shows an operator-sdk command this test does not know: %s", installDoc, command)
		}
		runOperatorSDK(t, args[2:]...)
	}

	sdk(commands[1])
	must(t, waitCSVSucceeded(ctx, ns, csvName(previousVersion), time.Minute))
	checkManagerPods(t, ns, csvName(previousVersion))
	run(t, "create", "namespace", team)
	run(t, "apply", "-n", team, "-f", "config/samples/echo_v1alpha1_echo.yaml")
	waitEchoReady(t, team, 2)

	t.Run("bundle-upgrade", func(t *testing.T) {
		sdk(commands[2])
		must(t, waitCSVSucceeded(ctx, ns, csvName(currentVersion), time.Minute))
		checkUpgraded(t, ns, team)
	})

	t.Run("cleanup", func(t *testing.T) {
		turnOnLiveAPI(t, ns)
		run(t, "delete", "-n", team, "echo/"+sample, "--timeout=180s")
		cleanup := docOperatorSDKCleanup(t)
		runOperatorSDK(t, cleanup...)
		run(t, "wait", "-n", ns, "--for=delete", "deployment/"+managerDeployment, "--timeout=180s")
		if out, err := kubectl.Run("get", "crd", "echoes.echo.dev"); err == nil {
			t.Errorf("cleanup left the CRDs, which the documentation says it deletes: %s", out)
		}
		// What operator-sdk cleanup leaves, as docs/install.md says to delete it.
		runDocumented(t, documented("delete", "clusterrole", "-l", "olm.owner=echo-operator.v0.1.0"))
		checkNoLiveAPIService(t)
		run(t, "delete", "namespace", ns, team, "--timeout=180s")
		checkNothingLeft(t, ns, team)
	})
}

// runOperatorSDK runs operator-sdk with args against the suite's cluster,
// trusting the registry's CA, in a directory of its own (it writes its
// caches in the working directory), and fails the test on error.
func runOperatorSDK(t *testing.T, args ...string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), runBundleTimeout)
	defer cancel()
	if err := copyFile(front.CAFile, filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	sdk := kubectl
	sdk.Dir, sdk.Env = dir, []string{"SSL_CERT_FILE=" + filepath.Join(dir, "ca.pem")}
	out, err := sdk.Command(ctx, "", os.Getenv("OPERATOR_SDK"), args...)
	if err != nil {
		t.Fatalf("operator-sdk %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("operator-sdk %s:\n%s", strings.Join(args, " "), out)
}

// docShellCommands is the commands of the first sh block of
// docs/install.md that holds mark, each with its continuation lines
// joined.
func docShellCommands(t *testing.T, mark string) []string {
	t.Helper()
	var commands []string
	for _, c := range strings.Split(strings.ReplaceAll(docBlock(t, "sh", mark), "\\\n", " "), "\n") {
		if c = strings.TrimSpace(c); c != "" {
			commands = append(commands, c)
		}
	}
	return commands
}

var sdkCleanup = regexp.MustCompile("`\\$OPERATOR_SDK (cleanup [^`]*)`")

// docOperatorSDKCleanup is the cleanup command docs/install.md shows, as
// operator-sdk's arguments.
func docOperatorSDKCleanup(t *testing.T) []string {
	t.Helper()
	m := sdkCleanup.FindStringSubmatch(installDocText(t))
	if m == nil {
		t.Fatalf("%s shows no `$OPERATOR_SDK cleanup ...`", installDoc)
	}
	return strings.Fields(m[1])
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
