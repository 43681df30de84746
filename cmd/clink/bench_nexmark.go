package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/clink-dev/clink/bench/nexmark"
	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// parseCount reads 10000000, 10M, 500k or 1.5M.
func parseCount(s string) (int64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a count (e.g. 10M, 500k, 2000)", s)
	}
	return int64(v * mult), nil
}

type countFlag struct{ n *int64 }

func (c countFlag) String() string {
	if c.n == nil {
		return ""
	}
	return strconv.FormatInt(*c.n, 10)
}
func (c countFlag) Set(s string) (err error) { *c.n, err = parseCount(s); return err }

// topicFlags are --topic-bid, --topic-auction and --topic-person.
func topicFlags(fs *flag.FlagSet) map[gen.Kind]*string {
	out := map[gen.Kind]*string{}
	for _, k := range gen.Kinds {
		out[k] = fs.String("topic-"+k.String(), "", "topic of the "+k.String()+" table (default: "+k.String()+")")
	}
	return out
}

func topicsOf(m map[gen.Kind]*string) map[gen.Kind]string {
	out := map[gen.Kind]string{}
	for k, v := range m {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}

// cmdBenchNexmark runs the Nexmark suite (or, with --hand, one query's
// hand-written loop: the harness runs it as a child process).
func cmdBenchNexmark(args []string) int {
	fs := flag.NewFlagSet("bench nexmark", flag.ContinueOnError)
	query := fs.String("query", "all", "a query (q0 ... q22, see docs/nexmark.md), a comma-separated list, or all")
	events := int64(10_000_000)
	fs.Var(countFlag{&events}, "events", "events of the stream (all three tables); 10M, 500k, ...")
	viaKafka := fs.Bool("via-kafka", false, "read JSON records from Kafka topics (preloaded; the broker runs in its own process) instead of the generator")
	brokers := fs.String("brokers", "", "with --via-kafka: an external Kafka cluster instead of `clink kafka serve`")
	partitions := fs.Int("partitions", 1, "with --via-kafka: partitions of each topic")
	seed := fs.Int64("seed", 0, "the stream's seed")
	rate := fs.Int64("rate", gen.DefaultRate, "event-time rate: events per second of event time")
	runs := fs.Int("runs", 1, "runs of each measurement (the median by CPU is reported)")
	latRate := fs.Int64("latency-rate", 10_000, "paced rate (events/s) of the latency run")
	latSeconds := fs.Int("latency-seconds", 20, "length of the latency run (0: no latency run)")
	stateEvents := int64(2_000_000)
	fs.Var(countFlag{&stateEvents}, "state-events", "stream length of the checkpointed run that measures state bytes (0: none)")
	results := fs.String("results", "", "write <query>.json results into this directory (e.g. bench/results)")
	doc := fs.String("doc", "", "render the results between the nexmark markers of this file (e.g. docs/performance.md)")
	profile := fs.String("profile", "", "write a CPU profile of one more engine run per query into this directory")
	dir := fs.String("dir", "", "scratch directory (default: a temporary one, removed after)")
	hand := fs.Bool("hand", false, "run the query's hand-written loop in this process (the harness's child)")
	handProfile := fs.String("hand-cpuprofile", "", "with --hand: write a CPU profile of the hand loop to this file")
	renderFrom := fs.String("render-from", "", "render the results in this directory (<query>.json) into --doc and print them, without running anything")
	stateOf := fs.String("state-of", "", "print the state measure of the checkpoints in this directory as JSON (the harness's child)")
	topics := topicFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var queries []*nexmark.Query
	if *query == "all" {
		queries = nexmark.Queries()
	} else {
		for _, name := range strings.Split(*query, ",") {
			q, err := nexmark.Lookup(strings.TrimSpace(name))
			if err != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
				return 2
			}
			queries = append(queries, q)
		}
	}
	if *renderFrom != "" {
		res, err := nexmark.ReadResults(*renderFrom)
		if err == nil && *doc != "" {
			err = nexmark.RenderDoc(*doc, res)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		nexmark.FormatText(os.Stdout, res)
		return 0
	}
	if *stateOf != "" {
		st, err := nexmark.StateOf(*stateOf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		b, _ := json.Marshal(st)
		fmt.Println(string(b))
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *hand {
		if len(queries) != 1 {
			fmt.Fprintln(os.Stderr, "error: --hand runs one query")
			return 2
		}
		q := queries[0]
		if *handProfile != "" {
			f, err := os.Create(*handProfile)
			if err != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
				return 1
			}
			defer f.Close()
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		out := &nexmark.Out{}
		var n int64
		var err error
		if *brokers != "" {
			n, err = nexmark.FeedKafka(ctx, q.New(out), q, *brokers, topicsOf(topics))
		} else {
			n = nexmark.FeedGenerator(q.New(out), q, gen.Config{Seed: *seed, Rate: *rate, BaseTime: gen.DefaultBaseTime}, events)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "%s hand loop: %d events, %d result rows\n", q.Name, n, out.Rows)
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "clink-nexmark-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	res, err := nexmark.RunSuite(ctx, nexmark.Config{
		Self: self, Queries: queries, Events: events, Seed: *seed, Rate: *rate,
		ViaKafka: *viaKafka, Brokers: *brokers, Partitions: *partitions, Runs: *runs,
		LatencyRate: *latRate, LatencySeconds: *latSeconds, StateEvents: stateEvents, ProfileDir: *profile,
		Dir: *dir, Results: *results, Log: os.Stderr, Progress: nexmark.NewProgress(os.Stderr),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	nexmark.FormatText(os.Stdout, res)
	if *doc != "" {
		if err := nexmark.RenderDoc(*doc, res); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	return 0
}

// cmdBenchProduce writes the JSON records of Nexmark tables to Kafka.
func cmdBenchProduce(args []string) int {
	fs := flag.NewFlagSet("bench produce", flag.ContinueOnError)
	brokers := fs.String("brokers", "localhost:9092", "comma-separated bootstrap brokers")
	var tables []string
	fs.Func("table", "a table to write: bid, auction, person or all (default all; repeat for several), each to its own topic", func(s string) error {
		tables = append(tables, s)
		return nil
	})
	topic := fs.String("topic", "", "with one --table: its topic (default: the table's name)")
	prefix := fs.String("topic-prefix", "", "with --table all: topics are <prefix>bid, <prefix>auction, <prefix>person")
	events := int64(1_000_000)
	fs.Var(countFlag{&events}, "events", "events of the stream (all three tables; each table gets its share)")
	seed := fs.Int64("seed", 0, "the stream's seed")
	rate := fs.Int64("rate", gen.DefaultRate, "event-time rate: events per second of event time")
	base := fs.Int64("base-time-ms", gen.DefaultBaseTime, "event time of the first event (epoch ms)")
	partitions := fs.Int("partitions", 1, "partitions of topics created")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := nexmark.ProduceConfig{Brokers: *brokers, Topics: map[gen.Kind]string{}, Partitions: int32(*partitions),
		Stream: gen.Config{Seed: *seed, Rate: *rate, BaseTime: *base}, Events: events}
	if len(tables) == 0 || (len(tables) == 1 && tables[0] == "all") {
		tables = []string{"bid", "auction", "person"}
	}
	if *topic != "" && len(tables) > 1 {
		fmt.Fprintln(os.Stderr, "error: --topic names one table's topic; with several tables use --topic-prefix")
		return 2
	}
	for _, t := range tables {
		k, ok := gen.ParseKind(t)
		if !ok {
			fmt.Fprintf(os.Stderr, "error: no table %q (bid, auction, person or all)\n", t)
			return 2
		}
		cfg.Tables = append(cfg.Tables, k)
		cfg.Topics[k] = *prefix + k.String()
		if *topic != "" {
			cfg.Topics[k] = *topic
		}
	}
	p := nexmark.NewProgress(os.Stderr)
	p.Step("producing")
	var want int64
	for _, k := range cfg.Tables {
		want += gen.CountOfKind(events, k)
	}
	cfg.Progress = func(done int64) { p.Set(done, want) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	counts, err := nexmark.Produce(ctx, cfg)
	p.Done()
	for _, k := range cfg.Tables {
		fmt.Printf("%s: %d records to topic %s\n", k, counts[k], cfg.Topics[k])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}
