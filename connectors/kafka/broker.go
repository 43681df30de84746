package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
)

// BrokerConfig configures the development broker.
type BrokerConfig struct {
	// Port to listen on at 127.0.0.1; 0 picks a free one.
	Port int
	// Topics are created at start-up unless they exist (from DataDir).
	Topics []TopicSpec
	// DataDir keeps topics, records and group offsets across restarts
	// (kfake's persistence); empty keeps everything in memory.
	DataDir string
}

// TopicSpec is a topic and its partition count.
type TopicSpec struct {
	Name       string
	Partitions int32
}

// ParseTopicSpec reads "name" (one partition) or "name:partitions".
func ParseTopicSpec(s string) (TopicSpec, error) {
	name, parts, ok := strings.Cut(s, ":")
	t := TopicSpec{Name: strings.TrimSpace(name), Partitions: 1}
	if ok {
		n, err := strconv.ParseInt(strings.TrimSpace(parts), 10, 32)
		if err != nil || n < 1 {
			return t, fmt.Errorf("topic %q: partitions must be a positive integer", s)
		}
		t.Partitions = int32(n)
	}
	if t.Name == "" {
		return t, fmt.Errorf("topic %q: no name", s)
	}
	return t, nil
}

// Broker is an embedded Kafka-protocol broker for development and tests:
// franz-go's kfake, one node on 127.0.0.1. It speaks the real protocol
// (produce, fetch, list offsets, groups, transactions), so any Kafka client
// works with it; it is not meant for production data.
type Broker struct {
	c    *kfake.Cluster
	addr string
}

// StartBroker starts a broker and creates cfg.Topics.
func StartBroker(cfg BrokerConfig) (*Broker, error) {
	opts := []kfake.Opt{kfake.Ports(cfg.Port), kfake.DefaultNumPartitions(1)}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka broker: %w", err)
	}
	b := &Broker{c: c, addr: c.ListenAddrs()[0]}
	for _, t := range cfg.Topics {
		if err := b.CreateTopic(context.Background(), t, true); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return b.addr }

// CreateTopic creates a topic on the broker; with ifNotExists an existing
// topic is left as it is.
func (b *Broker) CreateTopic(ctx context.Context, t TopicSpec, ifNotExists bool) error {
	return CreateTopic(ctx, &ClientConfig{Brokers: []string{b.addr}, ConnectTimeout: defaultTimeout}, t, ifNotExists)
}

// Close stops the broker (saving its state to DataDir, if any).
func (b *Broker) Close() { b.c.Close() }

// Serve runs a broker until ctx is done; ready is called with its address
// once it listens and its topics exist.
func Serve(ctx context.Context, cfg BrokerConfig, ready func(addr string)) error {
	b, err := StartBroker(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if ready != nil {
		ready(b.Addr())
	}
	<-ctx.Done()
	return nil
}

// CreateTopic creates a topic with replication factor 1 (the dev broker's)
// or the cluster's default. With ifNotExists an existing topic is not an
// error.
func CreateTopic(ctx context.Context, cc *ClientConfig, t TopicSpec, ifNotExists bool) error {
	cl, err := cc.newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, cc.timeout())
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("%w %s: %v", ErrUnreachable, cc, err)
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, t.Partitions, -1, nil, t.Name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) && ifNotExists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", t.Name, err)
	}
	return nil
}
