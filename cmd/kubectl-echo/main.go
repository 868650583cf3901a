package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/echo-operator/echo-operator/internal/kubectlecho"
)

func main() {
	cmd := kubectlecho.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
