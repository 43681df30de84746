package kafka_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors/kafka"
)

// TestConsumeIsolation: Consume reads committed records by default, so a
// user checking an exactly-once topic does not see the rows of aborted
// transactions as duplicates; ReadUncommitted shows them.
func TestConsumeIsolation(t *testing.T) {
	b := broker(t, "t:1")
	produce(t, b.Addr(), "t", rec{0, "", "plain"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("t"), kgo.TransactionalID("consume-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tx := range []struct {
		value  string
		commit bool
	}{{"aborted-1", false}, {"committed", true}, {"aborted-2", false}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(tx.value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(tx.commit)); err != nil {
			t.Fatal(err)
		}
	}
	cc, err := kafka.NewClientConfig(map[string]string{"brokers": b.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		uncommitted bool
		want        string
	}{
		{false, "plain\ncommitted\n"},
		{true, "plain\naborted-1\ncommitted\naborted-2\n"},
	} {
		var out bytes.Buffer
		n, err := kafka.Consume(ctx, cc, kafka.ConsumeConfig{Topic: "t", FromBeginning: true, ToEnd: true, ReadUncommitted: c.uncommitted}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != c.want || int(n) != bytes.Count(out.Bytes(), []byte("\n")) {
			t.Errorf("read_uncommitted=%v: %d records %q, want %q", c.uncommitted, n, out.String(), c.want)
		}
	}
}
