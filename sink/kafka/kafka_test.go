package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/sink/kafka"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// cluster starts an in-process Kafka cluster of three partitions per
// topic that creates topics on demand, closed when the test ends.
func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newSink returns a sink to c, closed when the test ends.
func newSink(t *testing.T, cfg kafka.Config) *kafka.Sink {
	t.Helper()
	s, err := kafka.New(cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// consumed is a record read back from Kafka.
type consumed struct {
	topic     string
	partition int32
	key       string
	value     string
	headers   map[string]string
}

// consume reads n records of topics from the start.
func consume(t *testing.T, brokers []string, n int, topics ...string) []consumed {
	t.Helper()
	got := consumeUntil(t, brokers, func(got []consumed) bool { return len(got) >= n }, topics...)
	require.Len(t, got, n)
	return got
}

// consumeUntil reads records of topics from the start until done says
// it has enough.
func consumeUntil(t *testing.T, brokers []string, done func([]consumed) bool, topics ...string) []consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var out []consumed
	for !done(out) {
		fs := cl.PollFetches(t.Context())
		require.NoError(t, t.Context().Err(), "read %d records", len(out))
		for _, e := range fs.Errors() {
			require.NoError(t, e.Err, "fetch %s/%d", e.Topic, e.Partition)
		}
		fs.EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			out = append(out, consumed{topic: r.Topic, partition: r.Partition, key: string(r.Key), value: string(r.Value), headers: h})
		})
	}
	return out
}

// waitFor waits until cond holds, looking every millisecond of the real
// clock, until the test's context ends.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		tm := timer.Real().NewTimer(time.Millisecond)
		select {
		case <-t.Context().Done():
			tm.Stop()
			t.Fatalf("waiting: %v", t.Context().Err())
		case <-tm.C():
		}
	}
}

// port is the port of a host:port.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

func message(id int, instance int64, process string) sink.Message {
	return sink.Message{
		ID: strconv.Itoa(id), Type: "activity.completed", Process: process, Instance: instance,
		Time: time.Date(2026, 11, 1, 12, 0, id, 0, time.UTC), Payload: fmt.Appendf(nil, `{"n":%d}`, id),
	}
}

func TestPublishKeepsEachInstanceInOnePartitionInOrder(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	s := newSink(t, kafka.Config{Brokers: c.ListenAddrs()})
	var msgs []sink.Message
	for i := range 30 {
		msgs = append(msgs, message(i, int64(100+i%5), "p"))
	}
	require.NoError(t, s.Publish(t.Context(), msgs[:20]))
	require.NoError(t, s.Publish(t.Context(), msgs[20:]))
	require.NoError(t, s.Publish(t.Context(), nil))

	got := consume(t, c.ListenAddrs(), len(msgs), kafka.DefaultTopic)
	partition := map[string]int32{}
	order := map[string][]string{}
	for _, r := range got {
		require.Equal(t, kafka.DefaultTopic, r.topic)
		if p, ok := partition[r.key]; ok {
			require.Equal(t, p, r.partition, "instance %s in one partition", r.key)
		}
		partition[r.key] = r.partition
		order[r.key] = append(order[r.key], r.headers[sink.HeaderID])
		id, err := strconv.Atoi(r.headers[sink.HeaderID])
		require.NoError(t, err)
		m := msgs[id]
		require.Equal(t, m.Headers(), r.headers)
		require.Equal(t, m.Key(), r.key)
		require.Equal(t, string(m.Payload), r.value)
	}
	for key, ids := range order {
		var want []string
		for _, m := range msgs {
			if m.Key() == key {
				want = append(want, m.ID)
			}
		}
		require.Equal(t, want, ids, "instance %s in order", key)
	}
}

func TestPublishToATopicPerProcess(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	s := newSink(t, kafka.Config{Brokers: c.ListenAddrs(), Topic: "wf.{process}"})
	require.NoError(t, s.Publish(t.Context(), []sink.Message{message(1, 1, "order"), message(2, 2, "Ship It!"), message(3, 1, "order")}))
	got := consume(t, c.ListenAddrs(), 3, "wf.order", "wf.Ship_It_")
	topics := map[string]int{}
	for _, r := range got {
		topics[r.topic]++
	}
	require.Equal(t, map[string]int{"wf.order": 2, "wf.Ship_It_": 1}, topics)
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	cfg, err := kafka.ParseURL("kafka://k1:9092,k2:9092/goxpdl.{process}?timeout=5s")
	require.NoError(t, err)
	require.Equal(t, kafka.Config{Brokers: []string{"k1:9092", "k2:9092"}, Topic: "goxpdl.{process}", Timeout: 5 * time.Second}, cfg)
	cfg, err = kafka.ParseURL("kafka://127.0.0.1:9092")
	require.NoError(t, err)
	require.Equal(t, kafka.Config{Brokers: []string{"127.0.0.1:9092"}}, cfg)
	for _, bad := range []string{
		"nats://127.0.0.1:4222", "kafka:///topic", "kafka://h:1/a/b", "kafka://h:1/t?timeout=soon",
		"kafka://h:1/t?timeout=-1s", "kafka://h:1/t?acks=0", "kafka://%zz",
	} {
		_, err := kafka.ParseURL(bad)
		require.ErrorIs(t, err, kafka.ErrConfig, bad)
	}
	_, err = kafka.New(kafka.Config{})
	require.ErrorIs(t, err, kafka.ErrConfig)
	for _, d := range []time.Duration{-time.Second, 500 * time.Millisecond} {
		_, err = kafka.New(kafka.Config{Brokers: []string{"h:1"}, Timeout: d})
		require.ErrorIs(t, err, kafka.ErrConfig, "timeout %v", d)
	}
}

// The engine's side, end to end: an engine publishing to Kafka.

// chain is a process of routes: a split, two branches, a join.
var chain = xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D")

// published starts an engine publishing to s, with Subscribe's records
// collected per instance as JSON (seq 0), and returns it started.
func published(t *testing.T, db *gorm.DB, s sink.Sink, configure ...func(*engine.Config)) (*engine.Engine, *traced) {
	t.Helper()
	cfg := engine.Config{DB: db, Publish: s, PublishInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, c := range configure {
		c(&cfg)
	}
	e, err := engine.New(cfg)
	require.NoError(t, err)
	tr := &traced{recs: map[int64][]string{}}
	t.Cleanup(e.Subscribe(tr.add))
	require.NoError(t, e.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
	_, err = e.Deploy(t.Context(), []byte(chain))
	require.NoError(t, err)
	return e, tr
}

type traced struct {
	mu   sync.Mutex
	recs map[int64][]string
	n    int
}

func (tr *traced) add(r engine.Record) {
	r.Seq = 0
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.recs[r.Instance] = append(tr.recs[r.Instance], string(data))
	tr.n++
}

func (tr *traced) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.n
}

// run starts n instances of chain and waits until they completed.
func run(t *testing.T, e *engine.Engine, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		id, err := e.StartProcess(t.Context(), engine.StartOptions{Package: "pkg", Process: "p"})
		require.NoError(t, err)
		ids[i] = id
	}
	require.NoError(t, e.WaitQuiet(t.Context()))
	for _, id := range ids {
		pi, err := e.Instance(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, wftype.ProcessCompleted, pi.State)
	}
	return ids
}

// requireDelivered checks that what a consumer that drops repeats by
// goxpdl-id reads is, per instance, what Subscribe saw, and returns how
// many repeats it dropped.
func requireDelivered(t *testing.T, got []consumed, tr *traced, ids []int64) int {
	t.Helper()
	seen := map[string]bool{}
	per := map[int64][]string{}
	repeats := 0
	for _, r := range got {
		if seen[r.headers[sink.HeaderID]] {
			repeats++
			continue
		}
		seen[r.headers[sink.HeaderID]] = true
		id, err := strconv.ParseInt(r.key, 10, 64)
		require.NoError(t, err)
		require.Equal(t, r.key, r.headers[sink.HeaderInstance])
		per[id] = append(per[id], r.value)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, id := range ids {
		require.NotEmpty(t, tr.recs[id])
		require.Equal(t, tr.recs[id], per[id], "instance %d: its records, in order, once", id)
	}
	return repeats
}

func TestAnEnginePublishesToKafka(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		c := cluster(t)
		e, tr := published(t, db, newSink(t, kafka.Config{Brokers: c.ListenAddrs()}))
		ids := run(t, e, 5)
		require.NoError(t, e.WaitPublished(t.Context()))
		require.Zero(t, requireDelivered(t, consume(t, c.ListenAddrs(), tr.count(), kafka.DefaultTopic), tr, ids))
	})
}

// Kafka appended a batch but answered with a timeout until the
// producer gave up: the engine publishes the batch again, with the same
// ids, and a consumer that drops repeats reads every record once, in
// order.
func TestARecordKafkaTookButDidNotAcknowledgeComesAgain(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		c := cluster(t)
		// The topic exists first, so that the fault meets the records
		// themselves.
		s := newSink(t, kafka.Config{Brokers: c.ListenAddrs(), Timeout: time.Second})
		require.NoError(t, s.Publish(t.Context(), []sink.Message{message(0, 0, "warm-up")}))
		fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: -1})
		e, tr := published(t, db, s)
		ids := run(t, e, 3)
		require.NoError(t, fault.Wait(t.Context(), 1))
		waitFor(t, func() bool { return e.Stats().Publish.Failures > 0 })
		fault.Remove()

		require.NoError(t, e.WaitPublished(t.Context()))
		// Kafka kept what it answered with a timeout: the consumer reads
		// every record, and some twice.
		want := tr.count() + 1 // and the warm-up
		got := consumeUntil(t, c.ListenAddrs(), func(got []consumed) bool {
			ids := map[string]bool{}
			for _, r := range got {
				ids[r.headers[sink.HeaderID]] = true
			}
			return len(ids) == want && len(got) > want
		}, kafka.DefaultTopic)
		var records []consumed
		for _, r := range got {
			if r.headers[sink.HeaderProcess] != "warm-up" {
				records = append(records, r)
			}
		}
		require.Positive(t, requireDelivered(t, records, tr, ids))
	})
}

// While Kafka cannot be reached the engine works on and the records
// wait; once it is back they are published.
func TestRecordsWaitWhileKafkaIsDown(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		c := cluster(t)
		addrs := c.ListenAddrs()
		c.Close()
		e, tr := published(t, db, newSink(t, kafka.Config{Brokers: addrs, Timeout: time.Second}))
		ids := run(t, e, 3) // the engine went on without Kafka
		waitFor(t, func() bool {
			st := e.Stats().Publish
			return st.Failures > 0 && st.Pending > 0
		})
		require.NotEmpty(t, e.Stats().Publish.LastError)

		back := cluster(t, kfake.Ports(port(t, addrs[0])))
		require.NoError(t, e.WaitPublished(t.Context()))
		require.Zero(t, requireDelivered(t, consume(t, back.ListenAddrs(), tr.count(), kafka.DefaultTopic), tr, ids))
	})
}

// A broker that creates no topics fails a Publish to a topic that does
// not exist, with Kafka's error, rather than hanging.
func TestPublishToAMissingTopicFails(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := newSink(t, kafka.Config{Brokers: c.ListenAddrs(), Topic: "missing", Timeout: 5 * time.Second})
	err = s.Publish(t.Context(), []sink.Message{message(1, 1, "p")})
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
}
