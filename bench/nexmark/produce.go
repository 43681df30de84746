package nexmark

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors/kafka"
	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// ProduceConfig says what `clink bench produce` writes.
type ProduceConfig struct {
	Brokers string
	// Tables to write, each to Topics[k] (default: the table's name).
	Tables []gen.Kind
	Topics map[gen.Kind]string
	// Partitions of topics that do not exist yet.
	Partitions int32
	Stream     gen.Config
	Events     int64 // of the whole stream; each table gets its share
	// Progress, when set, is called now and then with the records
	// acknowledged so far.
	Progress func(done int64)
}

// Produce writes the JSON records of the chosen tables of the first
// cfg.Events events to their topics (created when missing), one
// goroutine per table, and returns the records acknowledged per table.
// Records carry no key: a topic of several partitions gets them in sticky
// batches, each partition in event-time order.
func Produce(ctx context.Context, cfg ProduceConfig) (map[gen.Kind]int64, error) {
	cc := &kafka.ClientConfig{Brokers: strings.Split(cfg.Brokers, ",")}
	parts := max(cfg.Partitions, 1)
	topicOf := func(k gen.Kind) string {
		if t := cfg.Topics[k]; t != "" {
			return t
		}
		return k.String()
	}
	for _, k := range cfg.Tables {
		if err := kafka.CreateTopic(ctx, cc, kafka.TopicSpec{Name: topicOf(k), Partitions: parts}, true); err != nil {
			return nil, err
		}
	}
	var done atomic.Int64
	var mu sync.Mutex
	counts := map[gen.Kind]int64{}
	var firstErr error
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if cfg.Progress != nil {
		var tick sync.WaitGroup
		tick.Add(1)
		go func() {
			defer tick.Done()
			progressLoop(stop, func() { cfg.Progress(done.Load()) })
		}()
		defer tick.Wait()
	}
	defer close(stop)
	for _, k := range cfg.Tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := produceTable(ctx, cfg, k, topicOf(k), &done)
			mu.Lock()
			defer mu.Unlock()
			counts[k] = n
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("producing %s: %w", k, err)
			}
		}()
	}
	wg.Wait()
	return counts, firstErr
}

// produceTable generates table k's records and produces them to topic
// (acks=all, idempotent, uncompressed: the Kafka producer's default
// compression.type=none, so consumers pay no decompression), returning
// the number acknowledged.
func produceTable(ctx context.Context, cfg ProduceConfig, k gen.Kind, topic string, done *atomic.Int64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(cfg.Brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var acked atomic.Int64
	var mu sync.Mutex
	var firstErr error
	promise := func(r *kgo.Record, err error) {
		if err == nil {
			acked.Add(1)
			return
		}
		mu.Lock()
		if firstErr == nil {
			firstErr = fmt.Errorf("topic %s partition %d: %w", r.Topic, r.Partition, err)
		}
		mu.Unlock()
	}
	// Values live in shared chunks and records in shared slices: the
	// client holds them until acknowledged.
	g := gen.NewGenerator(cfg.Stream)
	var chunk []byte
	var recs []kgo.Record
	var p gen.Person
	var a gen.Auction
	var b gen.Bid
	var since int64
	for e := gen.NextOfKind(0, k); e < cfg.Events; e = gen.NextOfKind(e+1, k) {
		if cap(chunk)-len(chunk) < 4096 {
			chunk = make([]byte, 0, 1<<20)
		}
		start := len(chunk)
		switch k {
		case gen.KindPerson:
			g.Person(e, &p)
			chunk = gen.AppendPerson(chunk, &p)
		case gen.KindAuction:
			g.Auction(e, &a)
			chunk = gen.AppendAuction(chunk, &a)
		default:
			g.Bid(e, &b)
			chunk = gen.AppendBid(chunk, &b)
		}
		if len(recs) == cap(recs) {
			recs = make([]kgo.Record, 0, 4096)
		}
		recs = append(recs, kgo.Record{Value: chunk[start:len(chunk):len(chunk)]})
		cl.Produce(ctx, &recs[len(recs)-1], promise)
		if since++; since == 4096 {
			done.Add(since)
			since = 0
			if err := ctx.Err(); err != nil {
				return acked.Load(), err
			}
		}
	}
	done.Add(since)
	if err := cl.Flush(ctx); err != nil {
		return acked.Load(), err
	}
	mu.Lock()
	defer mu.Unlock()
	return acked.Load(), firstErr
}
