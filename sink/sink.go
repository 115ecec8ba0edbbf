// Package sink is what the engine publishes its records to
// (engine.Config.Publish): the Sink interface a message broker's adapter
// implements, and the Message it receives. Subpackages sink/kafka (Kafka,
// with franz-go) and sink/nats (NATS JetStream) are the adapters goxpdl
// ships; a host may write its own.
//
// # What a sink receives
//
// Every step of a process instance that the engine commits makes records
// (engine.Record: process.started, activity.completed,
// workitem.allocated, ...; what `goxpdl run --trace jsonl` prints). With
// a sink configured the engine writes each record to a publication
// outbox in the transaction of the step itself, so that a record exists
// exactly when its step does, and a publisher hands the waiting records
// to the sink in batches, deleting them once Publish returned nil
// (docs/sinks.md).
//
// Nothing can be lost or reordered on that path. The outbox holds only
// the records not yet published, and the publisher reads what waits
// there rather than moving a cursor past the ids it has seen (ids are
// handed out before their transactions commit, in another order than the
// commits, so a cursor would skip a late commit). An instance's records
// are ordered by the version of the instance their step committed, which
// the optimistic version check makes grow with every step, on whichever
// node, whatever its clock; a batch is read in one statement as, per
// instance, a prefix of its waiting records in that order.
//
// The contract between the publisher and a Sink:
//
//   - at least once: a batch whose Publish failed (or whose success the
//     engine could not record: a crash, a lost database connection) is
//     published again, each message with the same ID. Brokers and
//     consumers drop the repeats by that ID (JetStream's Nats-Msg-Id
//     window does it for NATS; a Kafka consumer keeps the IDs it saw).
//   - in order per instance: within a batch, the messages of one process
//     instance come in the order their steps happened, and a later batch
//     holds only later messages of that instance (or repeats). A Sink must
//     keep that order on the wire: Kafka puts all of an instance's
//     messages in one partition by their key; the NATS sink sends an
//     instance's next message only once the previous one was
//     acknowledged. Where a repeat follows later messages (after a
//     failure), dropping repeats by ID restores the order.
//   - Publish returns nil only when the broker accepted every message of
//     the batch; an error makes the whole batch come again after a
//     backoff. Publish must honour ctx: the engine cancels it when it
//     stops.
//
// One engine process calls Publish at a time (one node of the nodes
// sharing a database holds the publisher's lease), never concurrently.
package sink

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Sink publishes the engine's records to a message broker.
type Sink interface {
	// Publish delivers msgs to the broker, keeping the order of each
	// instance's messages, and returns nil only once the broker accepted
	// all of them. On an error the engine publishes the same messages
	// again later (with the same IDs).
	Publish(ctx context.Context, msgs []Message) error
}

// Func adapts a function to a Sink.
type Func func(ctx context.Context, msgs []Message) error

// Publish calls f.
func (f Func) Publish(ctx context.Context, msgs []Message) error { return f(ctx, msgs) }

// Message is one record of the engine, ready to publish.
type Message struct {
	// ID identifies the record for good: a message published again
	// carries the same ID, so a broker or a consumer can drop repeats.
	// It is a decimal number, unique among the records of one database.
	ID string
	// Type is the record's type (engine.Record.Type, e.g.
	// "activity.completed").
	Type string
	// Process is the XPDL WorkflowProcess id of the instance's
	// definition.
	Process string
	// Instance is the process instance the record is about.
	Instance int64
	// Time is when the step happened, by the engine's clock.
	Time time.Time
	// Payload is the record as JSON: the object `goxpdl run --trace
	// jsonl` prints for it (its "seq" is 0: the number orders one
	// engine's live records only).
	Payload []byte
}

// Key is the message's partition key: the instance id in decimal. All of
// an instance's messages share it, so Kafka keeps them in one partition,
// in order.
func (m Message) Key() string { return strconv.FormatInt(m.Instance, 10) }

// Headers are the message's headers, by the names below: its ID, type,
// process and instance.
func (m Message) Headers() map[string]string {
	return map[string]string{
		HeaderID:       m.ID,
		HeaderType:     m.Type,
		HeaderProcess:  m.Process,
		HeaderInstance: m.Key(),
	}
}

// The headers every message carries (Message.Headers). The NATS sink
// also sets Nats-Msg-Id to the ID, for JetStream's duplicate window.
const (
	HeaderID       = "goxpdl-id"
	HeaderType     = "goxpdl-type"
	HeaderProcess  = "goxpdl-process"
	HeaderInstance = "goxpdl-instance"
)

// ProcessPlaceholder, in a topic or subject, stands for the message's
// process id: "goxpdl.{process}" gives one topic per process definition,
// "goxpdl.records" one for all.
const ProcessPlaceholder = "{process}"

// Topic returns template with ProcessPlaceholder replaced by m's process
// id, made safe for Kafka topic names and NATS subject tokens alike:
// every character but ASCII letters, digits, '-' and '_' becomes '_' (a
// '.' would split a NATS subject). An empty process id becomes "_".
func Topic(template string, m Message) string {
	if !strings.Contains(template, ProcessPlaceholder) {
		return template
	}
	return strings.ReplaceAll(template, ProcessPlaceholder, Token(m.Process))
}

// Token is s made safe as one token of a topic or subject (see Topic).
func Token(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
