package nats_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/sink/nats"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// The tests run against a real NATS server with JetStream:
// GOXPDL_NATS_URL, or nats://127.0.0.1:4222. Without one they are
// skipped, unless GOXPDL_REQUIRE_NATS is set (CI sets it), when they fail.
const (
	urlEnv     = "GOXPDL_NATS_URL"
	requireEnv = "GOXPDL_REQUIRE_NATS"
)

// serverURL returns the server's URL, or skips (fails) the test when it
// does not answer.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		u = natsio.DefaultURL
	}
	cfg, err := nats.ParseURL(u)
	require.NoError(t, err)
	host := strings.TrimPrefix(strings.Split(cfg.URL, ",")[0], "nats://")
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", host)
	if err != nil {
		if os.Getenv(requireEnv) != "" {
			t.Fatalf("%s is set but no NATS server answers at %s (start nats-server -js): %v", requireEnv, u, err)
		}
		t.Skipf("no NATS server at %s (set %s, start nats-server -js): %v", u, urlEnv, err)
	}
	require.NoError(t, conn.Close())
	return u
}

// testStream is a stream of the test's own, over subjects under prefix,
// deleted when the test ends.
type testStream struct {
	url, name, prefix string
	js                jetstream.JetStream
}

func newTestStream(t *testing.T) *testStream {
	t.Helper()
	u := serverURL(t)
	nc, err := natsio.Connect(u)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	id := strings.ToLower(rand.Text()[:12])
	ts := &testStream{url: u, name: "GOXPDL_T_" + strings.ToUpper(id), prefix: "goxpdl_t_" + id, js: js}
	t.Cleanup(func() {
		err := js.DeleteStream(context.Background(), ts.name)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			require.NoError(t, err)
		}
	})
	return ts
}

// create creates the stream over its prefix's subjects.
func (ts *testStream) create(t *testing.T) {
	t.Helper()
	_, err := ts.js.CreateStream(t.Context(), jetstream.StreamConfig{Name: ts.name, Subjects: []string{ts.prefix + ".>"}})
	require.NoError(t, err)
}

// stored returns the messages the stream holds, in order.
func (ts *testStream) stored(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	s, err := ts.js.Stream(t.Context(), ts.name)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

func newSink(t *testing.T, cfg nats.Config) *nats.Sink {
	t.Helper()
	s, err := nats.New(cfg)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func message(id int, instance int64, process string) sink.Message {
	return sink.Message{
		ID: strconv.Itoa(id), Type: "activity.completed", Process: process, Instance: instance,
		Time: time.Date(2026, 11, 1, 12, 0, id, 0, time.UTC), Payload: fmt.Appendf(nil, `{"n":%d}`, id),
	}
}

func TestPublishInOrderOnceEach(t *testing.T) {
	t.Parallel()
	ts := newTestStream(t)
	ts.create(t)
	s := newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".records"})
	var msgs []sink.Message
	for i := range 30 {
		msgs = append(msgs, message(i+1, int64(100+i%4), "p"))
	}
	require.NoError(t, s.Publish(t.Context(), msgs[:20]))
	require.NoError(t, s.Publish(t.Context(), msgs[10:]), "a batch again, in part: the repeats are dropped")
	require.NoError(t, s.Publish(t.Context(), nil))

	got := ts.stored(t)
	require.Len(t, got, len(msgs), "each record once (Nats-Msg-Id)")
	per := map[string][]string{}
	for _, m := range got {
		require.Equal(t, ts.prefix+".records", m.Subject)
		id := m.Header.Get(sink.HeaderID)
		require.Equal(t, id, m.Header.Get(jetstream.MsgIDHeader))
		n, err := strconv.Atoi(id)
		require.NoError(t, err)
		want := msgs[n-1]
		for k, v := range want.Headers() {
			require.Equal(t, v, m.Header.Get(k), k)
		}
		require.Equal(t, string(want.Payload), string(m.Data))
		per[want.Key()] = append(per[want.Key()], id)
	}
	for key, ids := range per {
		var want []string
		for _, m := range msgs {
			if m.Key() == key {
				want = append(want, m.ID)
			}
		}
		require.Equal(t, want, ids, "instance %s in order", key)
	}
}

func TestPublishCreatesItsStreamWithASubjectPerProcess(t *testing.T) {
	t.Parallel()
	ts := newTestStream(t)
	s := newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".{process}", Stream: ts.name, Duplicates: time.Minute})
	require.NoError(t, s.Publish(t.Context(), []sink.Message{message(1, 1, "order"), message(2, 2, "ship it")}))
	stream, err := ts.js.Stream(t.Context(), ts.name)
	require.NoError(t, err)
	info, err := stream.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{ts.prefix + ".*"}, info.Config.Subjects)
	require.Equal(t, time.Minute, info.Config.Duplicates)
	var subjects []string
	for _, m := range ts.stored(t) {
		subjects = append(subjects, m.Subject)
	}
	require.Equal(t, []string{ts.prefix + ".order", ts.prefix + ".ship_it"}, subjects)

	// A second sink finds the stream there.
	again := newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".{process}", Stream: ts.name})
	require.NoError(t, again.Publish(t.Context(), []sink.Message{message(3, 1, "order")}))
	require.Len(t, ts.stored(t), 3)
}

func TestPublishWithoutAStreamFails(t *testing.T) {
	t.Parallel()
	ts := newTestStream(t) // not created
	s := newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".records", Timeout: time.Second})
	require.Error(t, s.Publish(t.Context(), []sink.Message{message(1, 1, "p")}), "no stream takes the subject")
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	cfg, err := nats.ParseURL("nats://u:pw@n1:4222,n2:4222/goxpdl.{process}?stream=WF&timeout=3s&duplicates=5m")
	require.NoError(t, err)
	require.Equal(t, nats.Config{URL: "nats://u:pw@n1:4222,nats://u:pw@n2:4222", Subject: "goxpdl.{process}", Stream: "WF",
		Timeout: 3 * time.Second, Duplicates: 5 * time.Minute}, cfg)
	cfg, err = nats.ParseURL("nats://127.0.0.1:4222?stream=")
	require.NoError(t, err)
	require.Equal(t, nats.Config{URL: "nats://127.0.0.1:4222"}, cfg, "no stream to create")
	cfg, err = nats.ParseURL("nats://127.0.0.1:4222")
	require.NoError(t, err)
	require.Equal(t, "GOXPDL", cfg.Stream)
	for _, bad := range []string{
		"kafka://127.0.0.1:9092", "nats:///x", "nats://h:1/x?timeout=soon", "nats://h:1/x?duplicates=0s", "nats://h:1/x?acks=1", "nats://%zz",
	} {
		_, err := nats.ParseURL(bad)
		require.ErrorIs(t, err, nats.ErrConfig, bad)
	}
	for _, bad := range []nats.Config{{Subject: "a.*"}, {Subject: "a b"}, {Subject: "a.>"}, {Timeout: -time.Second}} {
		_, err := nats.New(bad)
		require.ErrorIs(t, err, nats.ErrConfig, "%+v", bad)
	}
}

// The engine's side, end to end.

// chain is a process of routes: a split, two branches, a join.
var chain = xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D")

type traced struct {
	mu   sync.Mutex
	recs map[int64][]string
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
}

// publishing starts an engine on db publishing to s, with Subscribe's
// records collected per instance as JSON (seq 0); stop stops it (and
// runs when the test ends, once).
func publishing(t *testing.T, db *gorm.DB, s sink.Sink, node string) (e *engine.Engine, tr *traced, stop func()) {
	t.Helper()
	e, err := engine.New(engine.Config{DB: db, Publish: s, PublishInterval: 20 * time.Millisecond, NodeID: node,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	tr = &traced{recs: map[int64][]string{}}
	t.Cleanup(e.Subscribe(tr.add))
	require.NoError(t, e.Start(t.Context()))
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, e.Stop(context.Background())) }) }
	t.Cleanup(stop)
	return e, tr, stop
}

// run deploys chain and runs n instances of it to completion.
func run(t *testing.T, e *engine.Engine, n int) []int64 {
	t.Helper()
	_, err := e.Deploy(t.Context(), []byte(chain))
	require.NoError(t, err)
	ids := make([]int64, n)
	for i := range ids {
		ids[i], err = e.StartProcess(t.Context(), engine.StartOptions{Package: "pkg", Process: "p"})
		require.NoError(t, err)
	}
	require.NoError(t, e.WaitQuiet(t.Context()))
	for _, id := range ids {
		pi, err := e.Instance(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, wftype.ProcessCompleted, pi.State)
	}
	return ids
}

// requireStored checks that the stream holds, per instance, what
// Subscribe saw, each once, in order.
func requireStored(t *testing.T, ts *testStream, tr *traced, ids []int64) {
	t.Helper()
	per := map[int64][]string{}
	seen := map[string]bool{}
	for _, m := range ts.stored(t) {
		id := m.Header.Get(jetstream.MsgIDHeader)
		require.False(t, seen[id], "record %s stored twice", id)
		seen[id] = true
		inst, err := strconv.ParseInt(m.Header.Get(sink.HeaderInstance), 10, 64)
		require.NoError(t, err)
		per[inst] = append(per[inst], string(m.Data))
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, id := range ids {
		require.NotEmpty(t, tr.recs[id])
		require.Equal(t, tr.recs[id], per[id], "instance %d", id)
	}
}

func TestAnEnginePublishesToNATS(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ts := newTestStream(t)
		e, tr, _ := publishing(t, db, newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".{process}", Stream: ts.name}), "n1")
		ids := run(t, e, 4)
		require.NoError(t, e.WaitPublished(t.Context()))
		requireStored(t, ts, tr, ids)
	})
}

// ackLost is a sink whose first calls reach JetStream but whose answers
// are lost: the engine publishes the batches again, with the same ids,
// and JetStream stores each record once.
type ackLost struct {
	sink.Sink
	mu    sync.Mutex
	lost  int
	calls int
}

func (a *ackLost) Publish(ctx context.Context, msgs []sink.Message) error {
	err := a.Sink.Publish(ctx, msgs)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.calls++; err == nil && a.calls <= a.lost {
		return errors.New("the acknowledgement was lost")
	}
	return err
}

func TestARecordJetStreamStoredButDidNotAcknowledgeIsStoredOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ts := newTestStream(t)
		s := &ackLost{Sink: newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".records", Stream: ts.name}), lost: 2}
		e, tr, _ := publishing(t, db, s, "n1")
		ids := run(t, e, 3)
		require.NoError(t, e.WaitPublished(t.Context()))
		require.EqualValues(t, 2, e.Stats().Publish.Failures)
		requireStored(t, ts, tr, ids)
	})
}

// An engine pointed at a port nothing listens on works on; its records
// wait in the outbox, and the next engine, pointed at the server,
// publishes them.
func TestRecordsWaitForAServerThatIsDown(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ts := newTestStream(t)
		var lc net.ListenConfig
		l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closed := "nats://" + l.Addr().String()
		require.NoError(t, l.Close())

		down := newSink(t, nats.Config{URL: closed, Subject: ts.prefix + ".records", Stream: ts.name, Timeout: time.Second})
		first, tr, stop := publishing(t, db, down, "n1")
		ids := run(t, first, 3)
		waitFor(t, func() bool {
			st := first.Stats().Publish
			return st.Failures > 0 && st.Pending > 0
		})
		require.NotEmpty(t, first.Stats().Publish.LastError)
		stop()

		up := newSink(t, nats.Config{URL: ts.url, Subject: ts.prefix + ".records", Stream: ts.name})
		second, _, _ := publishing(t, db, up, "n2")
		require.NoError(t, second.WaitPublished(t.Context()))
		requireStored(t, ts, tr, ids)
	})
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
