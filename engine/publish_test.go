package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// publishedPackage is a process of several steps: a parallel split and
// join of routes, then a manual activity (a command of the host's), then
// an end.
func publishedPackage() string {
	route := func(id, join, split string) string { return xpdltest.Activity(id, "<Route/>", join, split) }
	acts := route("A", "", "and") + route("B", "", "") + route("C", "", "") + route("D", "and", "") +
		xpdltest.Activity("Review", "<Implementation><No/></Implementation><Performer>clerk</Performer>", "", "") +
		route("E", "", "")
	trans := xpdltest.Transition("t1", "A>B") + xpdltest.Transition("t2", "A>C") + xpdltest.Transition("t3", "B>D") +
		xpdltest.Transition("t4", "C>D") + xpdltest.Transition("t5", "D>Review") + xpdltest.Transition("t6", "Review>E")
	return xpdltest.Package(xpdltest.Process("p", "", acts, trans))
}

// brokerLog is a sink that keeps what it accepted, in order; fail, when
// set, decides per call whether the call fails before the broker takes
// the batch ("down") or after ("lost": the broker kept it, the answer
// was lost).
type brokerLog struct {
	mu       sync.Mutex
	accepted []sink.Message
	calls    int
	fail     func(call int) (down, lost bool)
	called   chan struct{}
}

func newBrokerLog(fail func(call int) (down, lost bool)) *brokerLog {
	return &brokerLog{fail: fail, called: make(chan struct{}, 1)}
}

func (b *brokerLog) Publish(ctx context.Context, msgs []sink.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() {
		select {
		case b.called <- struct{}{}:
		default:
		}
	}()
	b.calls++
	var down, lost bool
	if b.fail != nil {
		down, lost = b.fail(b.calls)
	}
	if down {
		return errors.New("broker unreachable")
	}
	b.accepted = append(b.accepted, msgs...)
	if lost {
		return errors.New("no answer from the broker")
	}
	return ctx.Err()
}

func (b *brokerLog) setFail(fail func(call int) (down, lost bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = fail
}

func (b *brokerLog) messages() []sink.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sink.Message(nil), b.accepted...)
}

// byInstance is what a consumer that drops repeats by ID sees, per
// instance: the payloads, in order, and how many repeats it dropped.
func byInstance(t *testing.T, msgs []sink.Message) (map[int64][]string, int) {
	t.Helper()
	seen := map[string]sink.Message{}
	out := map[int64][]string{}
	repeats := 0
	for _, m := range msgs {
		if first, ok := seen[m.ID]; ok {
			require.Equal(t, first, m, "a repeat is the same message")
			repeats++
			continue
		}
		seen[m.ID] = m
		var rec engine.Record
		require.NoError(t, json.Unmarshal(m.Payload, &rec))
		require.Equal(t, m.Type, rec.Type)
		require.Equal(t, m.Process, rec.Process)
		require.Equal(t, m.Instance, rec.Instance)
		require.True(t, m.Time.Equal(rec.Time))
		require.Equal(t, fmt.Sprint(m.Instance), m.Key())
		out[m.Instance] = append(out[m.Instance], string(m.Payload))
	}
	return out, repeats
}

// traced collects the records Subscribe sees, per instance, as the JSON
// `goxpdl run --trace` prints (with seq 0, which numbers live records).
type traced struct {
	mu   sync.Mutex
	recs map[int64][]string
}

func traceRecords(h *harness) *traced {
	tr := &traced{recs: map[int64][]string{}}
	h.t.Cleanup(h.e.Subscribe(func(r engine.Record) {
		if r.Instance == 0 {
			return // batch progress belongs to no instance
		}
		r.Seq = 0
		data, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.recs[r.Instance] = append(tr.recs[r.Instance], string(data))
	}))
	return tr
}

func (tr *traced) all() map[int64][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make(map[int64][]string, len(tr.recs))
	for id, recs := range tr.recs {
		out[id] = append([]string(nil), recs...)
	}
	return out
}

// waitFor waits until cond holds, looking every millisecond of the real
// clock, until the test's context ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		tm := timer.Real().NewTimer(time.Millisecond)
		select {
		case <-t.Context().Done():
			tm.Stop()
			t.Fatalf("waiting for %s: %v", what, t.Context().Err())
		case <-tm.C():
		}
	}
}

// runReviews starts n instances of publishedPackage and completes their
// reviews, and returns their ids once they completed.
func runReviews(h *harness, n int) []int64 {
	h.t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = h.startProcess("pkg", "p", nil)
	}
	for _, id := range ids {
		h.idle()
		require.NoError(h.t, h.complete(h.item(id, "Review").ID, nil))
	}
	for _, id := range ids {
		h.requireState(id, wftype.ProcessCompleted)
	}
	return ids
}

func TestPublishSendsEveryRecordInOrder(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		broker := newBrokerLog(nil)
		h := newHarness(t, db, func(c *engine.Config) { c.Publish, c.PublishInterval, c.PublishBatch = broker, 10*time.Millisecond, 7 })
		tr := traceRecords(h)
		h.start()
		h.deploy(publishedPackage())
		ids := runReviews(h, 3)

		// A host's transaction: Subscribe never sees its records, the sink
		// does, once the host commits.
		var hosted int64
		require.NoError(t, h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
			var err error
			hosted, err = h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "pkg", Process: "p"})
			return err
		}))
		require.NoError(t, h.e.WaitQuiet(h.ctx)) // the poller takes a host's work
		h.item(hosted, "Review")

		require.NoError(t, h.e.WaitPublished(h.ctx))
		msgs := broker.messages()
		got, repeats := byInstance(t, msgs)
		require.Zero(t, repeats)
		want := tr.all()
		for _, id := range ids {
			require.NotEmpty(t, want[id])
			require.Equal(t, want[id], got[id], "instance %d: every record, in order, as --trace prints it", id)
		}
		var started engine.Record
		require.NoError(t, json.Unmarshal([]byte(got[hosted][0]), &started))
		require.Equal(t, engine.RecordProcessStarted, started.Type, "the host's transaction's records are published")
		require.Equal(t, want[hosted], got[hosted][1:], "Subscribe saw only the engine's own steps after it")

		// The publisher counts a batch once it deleted it, a moment after
		// WaitPublished saw the outbox empty.
		waitFor(t, "the count", func() bool { return h.e.Stats().Publish.Published == uint64(len(msgs)) })
		st := h.e.Stats().Publish
		require.True(t, st.Enabled)
		require.True(t, st.Holding)
		require.Zero(t, st.Failures)
		require.Zero(t, st.Pending)
		require.Zero(t, st.Lag)
	})
}

func TestPublishIsOffByDefault(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(publishedPackage())
		runReviews(h, 1)
		require.Equal(t, engine.PublishStats{}, h.e.Stats().Publish)
		b, err := h.e.Store().CountPublications(h.ctx, 0)
		require.NoError(t, err)
		require.Zero(t, b.Count, "nothing is written without a sink")
		require.NoError(t, h.e.WaitPublished(h.ctx), "nothing to wait for")
	})
}

func TestPublishConfigIsChecked(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenSQLiteMemory(t)
	for _, bad := range []func(*engine.Config){
		func(c *engine.Config) { c.PublishInterval = -time.Second },
		func(c *engine.Config) { c.PublishBatch = -1 },
		func(c *engine.Config) { c.PublishLease = -time.Second },
	} {
		cfg := engine.Config{DB: db, Publish: newBrokerLog(nil)}
		bad(&cfg)
		_, err := engine.New(cfg)
		require.ErrorIs(t, err, engine.ErrConfig)
	}
}

// A broker that kept a batch but whose answer was lost gets the batch
// again, with the same IDs; a consumer that drops repeats by ID sees
// every record once, in order.
func TestPublishIsAtLeastOnce(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		broker := newBrokerLog(func(call int) (bool, bool) { return false, call <= 2 })
		h := newHarness(t, db, func(c *engine.Config) { c.Publish, c.PublishInterval = broker, 10*time.Millisecond })
		tr := traceRecords(h)
		h.start()
		h.deploy(publishedPackage())
		ids := runReviews(h, 2)
		require.NoError(t, h.e.WaitPublished(h.ctx))

		got, repeats := byInstance(t, broker.messages())
		require.Positive(t, repeats, "the batches whose answer was lost came again")
		want := tr.all()
		for _, id := range ids {
			require.Equal(t, want[id], got[id], "instance %d", id)
		}
		st := h.e.Stats().Publish
		require.EqualValues(t, 2, st.Failures)
		require.Empty(t, st.LastError, "the last call succeeded")
	})
}

// A sink that cannot be reached holds no engine work up: the records
// wait, the Stats say how far behind it is, and they go out once it is
// back.
func TestPublishWaitsOutAnUnreachableSink(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(epoch)
		broker := newBrokerLog(func(int) (bool, bool) { return true, false })
		h := newHarness(t, db, func(c *engine.Config) { c.Clock, c.Publish = clock, broker })
		tr := traceRecords(h)
		h.start()
		h.deploy(publishedPackage())
		ids := runReviews(h, 2) // the engine went on without the sink
		<-broker.called
		waitFor(t, "the failure in Stats", func() bool {
			st := h.e.Stats().Publish
			return st.Failures > 0 && st.Pending > 0
		})
		clock.Advance(30 * time.Second)
		st := h.e.Stats().Publish
		require.Equal(t, "sink: broker unreachable", st.LastError)
		require.Equal(t, 30*time.Second, st.Lag, "the oldest record waits since the first step")
		require.Empty(t, broker.messages())

		broker.setFail(nil)
		clock.Advance(time.Minute) // past the backoff
		require.NoError(t, h.e.WaitPublished(h.ctx))
		got, _ := byInstance(t, broker.messages())
		want := tr.all()
		for _, id := range ids {
			require.Equal(t, want[id], got[id], "instance %d", id)
		}
		require.Empty(t, h.e.Stats().Publish.LastError)
	})
}

// The records outlive the engine: what one run could not publish, the
// next publishes (a stop cancels a Publish under way; the records stay).
func TestPublishResumesAfterRestart(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		down := newBrokerLog(func(int) (bool, bool) { return true, false })
		first := newHarness(t, db, func(c *engine.Config) { c.Publish, c.NodeID = down, "n1" })
		tr := traceRecords(first)
		require.NoError(t, first.e.Start(first.ctx))
		first.deploy(publishedPackage())
		ids := runReviews(first, 2)
		<-down.called
		require.NoError(t, first.e.Stop(context.Background()))
		want := tr.all()

		up := newBrokerLog(nil)
		second := newHarness(t, db, func(c *engine.Config) { c.Publish, c.NodeID = up, "n2" }).start()
		require.NoError(t, second.e.WaitPublished(second.ctx))
		got, _ := byInstance(t, up.messages())
		for _, id := range ids {
			require.Equal(t, want[id], got[id], "instance %d", id)
		}
	})
}

// A panicking sink is a failed Publish, not a crash.
func TestPublishSurvivesAPanickingSink(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenSQLite(t)
	var mu sync.Mutex
	calls := 0
	called := make(chan struct{}, 1)
	h := newHarness(t, db, func(c *engine.Config) {
		c.PublishInterval = 10 * time.Millisecond
		c.Publish = sink.Func(func(context.Context, []sink.Message) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 1 {
				defer func() { called <- struct{}{} }()
				panic("sink bug")
			}
			return nil
		})
	}).start()
	h.deploy(publishedPackage())
	h.startProcess("pkg", "p", nil)
	<-called
	require.NoError(t, h.e.WaitPublished(h.ctx))
	require.EqualValues(t, 1, h.e.Stats().Publish.Failures)
}

// Nodes sharing a database publish one at a time (a lease), and when the
// one publishing stops, another takes over.
func TestPublishOneNodeAtATime(t *testing.T) {
	t.Parallel()
	db := dbtest.OpenMySQL(t) // SQLite has one engine process per database
	broker := newBrokerLog(nil)
	nodes := make([]*harness, 2)
	for i := range nodes {
		nodes[i] = newHarness(t, db, func(c *engine.Config) {
			c.Publish, c.PublishInterval, c.NodeID = broker, 10*time.Millisecond, fmt.Sprintf("n%d", i)
		})
	}
	trs := []*traced{traceRecords(nodes[0]), traceRecords(nodes[1])}
	for _, n := range nodes {
		require.NoError(t, n.e.Start(n.ctx))
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			require.NoError(t, n.e.Stop(context.Background()))
		}
	})
	nodes[0].deploy(publishedPackage())
	ids := append(runReviews(nodes[0], 2), runReviews(nodes[1], 2)...)
	for _, n := range nodes {
		require.NoError(t, n.e.WaitPublished(n.ctx))
	}
	holders := 0
	for _, n := range nodes {
		if n.e.Stats().Publish.Holding {
			holders++
		}
	}
	require.Equal(t, 1, holders)

	// Records of one instance may be made on both nodes (a node's event
	// may be processed by the other): the consumer's order is the order
	// the steps happened, whichever node made them.
	got, repeats := byInstance(t, broker.messages())
	require.Zero(t, repeats)
	for _, id := range ids {
		var want []string
		for _, tr := range trs {
			want = append(want, tr.all()[id]...)
		}
		require.ElementsMatch(t, want, got[id], "instance %d: every record once", id)
	}
	for _, id := range ids {
		requireInOrder(t, got[id])
	}

	// The holder stops: the other publishes from then on.
	holder, other := 0, 1
	if !nodes[holder].e.Stats().Publish.Holding {
		holder, other = other, holder
	}
	require.NoError(t, nodes[holder].e.Stop(context.Background()))
	before := len(broker.messages())
	more := runReviews(nodes[other], 1)
	require.NoError(t, nodes[other].e.WaitPublished(nodes[other].ctx))
	got, _ = byInstance(t, broker.messages()[before:])
	require.Equal(t, trs[other].all()[more[0]], got[more[0]])
	require.True(t, nodes[other].e.Stats().Publish.Holding)
}

// requireInOrder checks that an instance's published records follow its
// life: started first, completed last, each activity started before it
// completed.
func requireInOrder(t *testing.T, payloads []string) {
	t.Helper()
	require.NotEmpty(t, payloads)
	recs := make([]engine.Record, len(payloads))
	for i, p := range payloads {
		require.NoError(t, json.Unmarshal([]byte(p), &recs[i]))
	}
	require.Equal(t, engine.RecordProcessStarted, recs[0].Type)
	require.Equal(t, engine.RecordProcessCompleted, recs[len(recs)-1].Type)
	started := map[int64]bool{}
	for i, r := range recs {
		require.False(t, i > 0 && r.Time.Before(recs[i-1].Time), "records in the order of their steps")
		switch r.Type {
		case engine.RecordActivityStarted:
			started[r.ActivityInstance] = true
		case engine.RecordActivityCompleted:
			require.True(t, started[r.ActivityInstance], "%s completed before it started", r.Activity)
		}
	}
}

// A node that died holding the publisher's lease (no Stop, no release)
// keeps it until it runs out; then another node takes over and publishes
// what waits.
func TestPublishTakesOverFromANodeThatDied(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(epoch)
		down := newBrokerLog(func(int) (bool, bool) { return true, false })
		first := newHarness(t, db, func(c *engine.Config) { c.Clock, c.Publish, c.NodeID = clock, down, "n1" })
		tr := traceRecords(first)
		require.NoError(t, first.e.Start(first.ctx))
		first.deploy(publishedPackage())
		ids := runReviews(first, 2)
		<-down.called
		require.NoError(t, first.e.Stop(context.Background()))
		want := tr.all()
		// The node that crashed: it held the lease, until 30 s from now.
		_, err := first.e.Store().AcquireLease(first.ctx, store.AcquireLeaseParams{
			Name: "publisher", Owner: "n0#crashed", Now: clock.Now(), Until: clock.Now().Add(engine.DefaultPublishLease),
		})
		require.NoError(t, err)

		up := newBrokerLog(nil)
		second := newHarness(t, db, func(c *engine.Config) { c.Clock, c.Publish, c.NodeID = clock, up, "n2" }).start()
		waitFor(t, "a look at the backlog", func() bool { return second.e.Stats().Publish.Pending > 0 })
		require.False(t, second.e.Stats().Publish.Holding)
		require.Empty(t, up.messages(), "the lease is the dead node's")

		clock.Advance(engine.DefaultPublishLease)
		require.NoError(t, second.e.WaitPublished(second.ctx))
		got, _ := byInstance(t, up.messages())
		for _, id := range ids {
			require.Equal(t, want[id], got[id], "instance %d", id)
		}
		require.True(t, second.e.Stats().Publish.Holding)
	})
}
