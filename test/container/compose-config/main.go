// compose-config loads compose files as `docker compose config` does, with compose-go, the loader docker compose
// itself runs: the compose specification's schema, interpolation, the merge of several -f files, and the checks of a
// project's references (secrets, volumes, networks, depends_on). It prints the resulting project as JSON, or one line
// saying what is wrong and exits 1. test/container/container.test.ts builds and runs it (no docker here, and
// podman-compose 1.0 has no `config`).
//
//	go run . compose.yaml [override.yaml...]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(files []string) error {
	options, err := cli.NewProjectOptions(files, cli.WithOsEnv)
	if err != nil {
		return err
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		return err
	}
	out, err := project.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
