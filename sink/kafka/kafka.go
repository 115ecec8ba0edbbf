// Package kafka publishes the engine's records to Apache Kafka (or a
// broker speaking its protocol), with franz-go: a sink.Sink for
// engine.Config.Publish.
//
// Each record becomes one Kafka record: its key is the process instance
// id, so that all of an instance's records land in one partition, in
// order; its value is the record as JSON; its headers are the message's
// (goxpdl-id, goxpdl-type, goxpdl-process, goxpdl-instance). The producer
// is franz-go's idempotent one (acks from all in-sync replicas, no
// duplicates or reordering from its own retries), and a Publish returns
// once Kafka acknowledged the whole batch, or fails when a record could
// not be delivered within Config.Timeout: the engine then publishes the
// batch again, so a consumer may see a record twice, with the same
// goxpdl-id header, and drops the repeat.
//
// Topics are created by the broker when it allows it
// (auto.create.topics.enable); otherwise create them beforehand.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/goxpdl/goxpdl/sink"
)

// DefaultTopic is the topic of every record when Config.Topic is empty.
const DefaultTopic = "goxpdl.records"

// DefaultTimeout bounds the delivery of one Publish's records when
// Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Config sets up a Sink.
type Config struct {
	// Brokers are the seed brokers, host:port; required.
	Brokers []string
	// Topic is where records go: one topic for all, or one per process
	// definition with sink.ProcessPlaceholder ("goxpdl.{process}").
	// Default DefaultTopic.
	Topic string
	// Timeout bounds how long one Publish waits for the brokers' answer,
	// and how long the producer tries to deliver a record it has not sent
	// yet (franz-go's RecordDeliveryTimeout, at least a second): a
	// Publish fails after it while the brokers cannot be reached or do
	// not answer. Default DefaultTimeout.
	Timeout time.Duration
	// Options are more franz-go client options (TLS, SASL, a client id,
	// a logger), applied after the sink's own.
	Options []kgo.Opt
}

// Sink publishes records to Kafka. Create it with New and Close it when
// the engine has stopped.
type Sink struct {
	client  *kgo.Client
	topic   string
	timeout time.Duration
}

var _ sink.Sink = (*Sink)(nil)

// ErrConfig is returned for a bad Config or URL.
var ErrConfig = errors.New("kafka sink: bad configuration")

// New returns a Sink for cfg. It does not connect: the producer connects
// when it first publishes, and keeps trying while the brokers are down.
func New(cfg Config) (*Sink, error) {
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("%w: no brokers", ErrConfig)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: timeout %v, want > 0", ErrConfig, cfg.Timeout)
	}
	if cfg.Timeout > 0 && cfg.Timeout < time.Second {
		return nil, fmt.Errorf("%w: timeout %v, want at least a second", ErrConfig, cfg.Timeout)
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(cfg.Timeout),
		kgo.ProduceRequestTimeout(cfg.Timeout),
	}, cfg.Options...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Sink{client: client, topic: cfg.Topic, timeout: cfg.Timeout}, nil
}

// Publish implements sink.Sink: it produces msgs and waits for Kafka's
// acknowledgement of every one, for Config.Timeout at most. The records
// of one instance share a key, hence a partition, and the idempotent
// producer keeps their order.
//
// A record the producer sent and got no answer for cannot be failed
// safely by an idempotent producer: it keeps trying it, in the
// background, while Publish gives up waiting at the timeout (or when ctx
// ends) and reports the failure. The engine then publishes the batch
// again; the copies queue behind the first ones, in order.
func (s *Sink) Publish(ctx context.Context, msgs []sink.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	// The network's time, not the engine's: a bound on the wait for
	// the brokers (the engine's clock may be a test's fake one).
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var (
		mu      sync.Mutex
		first   error
		pending = len(msgs)
		done    = make(chan struct{})
	)
	promise := func(_ *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
		if pending--; pending == 0 {
			close(done)
		}
	}
	for _, m := range msgs {
		headers := m.Headers()
		// No Timestamp: the producer sets the time it produces at, which
		// its delivery timeout counts from (a record that waited in the
		// outbox would time out at once); the step's time is in the
		// payload.
		r := &kgo.Record{Topic: sink.Topic(s.topic, m), Key: []byte(m.Key()), Value: m.Payload,
			Headers: make([]kgo.RecordHeader, 0, len(headers))}
		for _, k := range []string{sink.HeaderID, sink.HeaderType, sink.HeaderProcess, sink.HeaderInstance} {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(headers[k])})
		}
		s.client.Produce(ctx, r, promise)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("kafka: produce %d records: %w", len(msgs), ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return fmt.Errorf("kafka: produce %d records: %w", len(msgs), first)
	}
	return nil
}

// Close closes the producer, giving up what it still buffers (the engine
// publishes it again).
func (s *Sink) Close() {
	s.client.Close()
}

// ParseURL reads a sink URL, kafka://HOST:PORT[,HOST:PORT...][/TOPIC],
// as `goxpdl serve --publish` takes it. TOPIC may contain
// sink.ProcessPlaceholder ("kafka://127.0.0.1:9092/goxpdl.{process}");
// without it, DefaultTopic. The query string may set timeout (a Go
// duration).
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if u.Scheme != "kafka" {
		return Config{}, fmt.Errorf("%w: %q: want kafka://HOST:PORT[/TOPIC]", ErrConfig, raw)
	}
	var cfg Config
	for b := range strings.SplitSeq(u.Host, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	if len(cfg.Brokers) == 0 {
		return Config{}, fmt.Errorf("%w: %q names no broker", ErrConfig, raw)
	}
	cfg.Topic = strings.TrimPrefix(u.Path, "/")
	if strings.Contains(cfg.Topic, "/") {
		return Config{}, fmt.Errorf("%w: topic %q has a '/'", ErrConfig, cfg.Topic)
	}
	for k, v := range u.Query() {
		switch k {
		case "timeout":
			if cfg.Timeout, err = time.ParseDuration(v[0]); err != nil || cfg.Timeout <= 0 {
				return Config{}, fmt.Errorf("%w: timeout %q, want a positive duration", ErrConfig, v[0])
			}
		default:
			return Config{}, fmt.Errorf("%w: unknown parameter %q", ErrConfig, k)
		}
	}
	return cfg, nil
}
