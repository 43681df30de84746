// Command clink runs streaming SQL jobs.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `clink: streaming SQL on Arrow

usage:
  clink run [flags] FILE.sql        run a script embedded (no daemons)
  clink run [flags] -e "SQL"        run SQL given inline
  clink run [flags] --plan FILE     run a Substrait plan (binary or JSON protobuf)
  clink run --coordinator HOST:PORT [--parallelism N] FILE.sql
                                    submit to a cluster (prints the job id)
  clink run --from-savepoint DIR --checkpoint-dir D FILE.sql
                                    restore a savepoint (embedded or with --coordinator)
  clink savepoint JOB_ID [--coordinator HOST:PORT] [--dir DIR]
                                    savepoint of a cluster job (it runs on; prints the path)
  clink stop JOB_ID [--coordinator HOST:PORT] [--dir DIR]
                                    stop a cluster job with a savepoint (prints the path)
  clink coordinator [--checkpoint-dir D] [--savepoint-dir D] [--addr 127.0.0.1:6123] [--http-addr 127.0.0.1:8081]
        [--tls-cert F --tls-key F --tls-ca F] [--insecure]   (another address needs CLINK_AUTH_TOKEN or mTLS)
  clink worker --coordinator HOST:PORT --slots N [--tls-cert F --tls-key F --tls-ca F]
  clink explain [--format=text|json|binary] FILE.sql | -e "SQL"
  clink bench sensors [flags]       measure the sensor pipeline
  clink kafka serve|create-topic|produce|consume   dev broker and Kafka client tools
  clink state-cat CHECKPOINT        print a checkpoint's manifest and state rows
  clink state-export --format=parquet|arrow|iceberg --out DIR CHECKPOINT
  clink state-diff A B              compare the state of two checkpoints
  clink state-query CHECKPOINT --sql "SELECT ... FROM state"
  clink state-query --job N --coordinator HOST:PORT --sql "SELECT ... FROM state"
                                    a running job's state (its newest completed
                                    checkpoint) over the Coordinator's Flight SQL
  clink sql --coordinator HOST:PORT [-e "SELECT ..."] [--output table|json]
                                    Flight SQL client: jobs, operators,
                                    checkpoints, workers, job_<id>.state
                                    (CHECKPOINT: a chk-<id> directory, or
                                    --checkpoint-dir DIR [--id N])
  clink savepoint check (--savepoint PATH | --checkpoint-dir DIR [--id N])
                      [--allow-non-restored-state] FILE.sql
                                    would FILE.sql restore it? per operator:
                                    restored, new, dropped or incompatible
                                    (also spelled savepoint-check)
  clink --version

Run 'clink <command> -h' for a command's flags.
`

// versionString is the -ldflags stamp (make build), or else, for a plain
// `go build`/`go install`, the module version or VCS revision that the Go
// toolchain recorded in the binary.
func versionString() string {
	if version != "0.1.0-dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			dirty = st.Value == "true"
		}
	}
	if rev == "" {
		return version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return version + "+" + rev
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	registerCheckpointStores()
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Println("clink", versionString())
		return 0
	case "-h", "--help", "help":
		fmt.Print(usage)
		return 0
	case "run":
		return cmdRun(args[1:])
	case "savepoint":
		// Job ids are numbers, so `clink savepoint check` cannot be a
		// savepoint of a job named check.
		if len(args) > 1 && args[1] == "check" {
			return cmdSavepointCheck(args[2:])
		}
		return cmdSavepoint(args[1:])
	case "stop":
		return cmdStop(args[1:])
	case "coordinator":
		return cmdCoordinator(args[1:])
	case "worker":
		return cmdWorker(args[1:])
	case "explain":
		return cmdExplain(args[1:])
	case "bench":
		return cmdBench(args[1:])
	case "kafka":
		return cmdKafka(args[1:])
	case "state-cat":
		return cmdStateCat(args[1:])
	case "state-export":
		return cmdStateExport(args[1:])
	case "state-diff":
		return cmdStateDiff(args[1:])
	case "state-query":
		return cmdStateQuery(args[1:])
	case "sql":
		return cmdSQL(args[1:])
	case "savepoint-check":
		return cmdSavepointCheck(args[1:])
	}
	fmt.Fprintf(os.Stderr, "clink: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// parseArgs parses flags before and after positional arguments (`clink
// run pipeline.sql --coordinator HOST:PORT` as well as `clink run
// --coordinator HOST:PORT pipeline.sql`); fs.Args() then holds the
// positional ones in order. "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}
