// Package nats publishes the engine's records to NATS JetStream, with
// nats.go's jetstream package: a sink.Sink for engine.Config.Publish.
//
// Each record becomes one message on Config.Subject (one for all, or one
// per process definition with sink.ProcessPlaceholder): the record as
// JSON, with the headers goxpdl-id, goxpdl-type, goxpdl-process and
// goxpdl-instance, and Nats-Msg-Id set to the record's ID. JetStream
// drops a message whose Nats-Msg-Id it stored within the stream's
// duplicate window (two minutes unless the stream says otherwise), so a
// batch the engine publishes again after a failure is stored once.
//
// The subjects must belong to a stream. With Config.Stream set, the sink
// creates that stream at its first Publish when it does not exist, over
// the subject (the placeholder becoming "*"); otherwise the host creates
// it.
//
// Order: the messages of one instance are published one after another,
// each once the previous one's acknowledgement came, and the instances
// of a batch side by side; a failure stops that instance's messages in
// the batch, so a later message of an instance is never stored before an
// earlier one that failed.
package nats

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/goxpdl/goxpdl/sink"
)

// DefaultSubject is the subject of every record when Config.Subject is
// empty.
const DefaultSubject = "goxpdl.records"

// DefaultTimeout bounds the wait for one message's acknowledgement when
// Config.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Config sets up a Sink.
type Config struct {
	// URL is the NATS server (or servers, comma-separated); default
	// nats://127.0.0.1:4222. Ignored with Conn.
	URL string
	// Conn is a connection of the host's to publish on instead; the
	// sink does not close it.
	Conn *natsio.Conn
	// Subject is where records go: one subject for all, or one per
	// process definition with sink.ProcessPlaceholder
	// ("goxpdl.{process}"). Default DefaultSubject.
	Subject string
	// Stream, when set, is the JetStream stream the sink creates at its
	// first Publish if it does not exist, over the subject (with the
	// placeholder as "*"), keeping Duplicates as its duplicate window.
	Stream     string
	Duplicates time.Duration
	// Timeout bounds the wait for each acknowledgement and each
	// JetStream request; default DefaultTimeout.
	Timeout time.Duration
	// Options are more nats.go connection options (credentials, TLS, a
	// name), applied after the sink's own. Ignored with Conn.
	Options []natsio.Option
}

// ErrConfig is returned for a bad Config or URL.
var ErrConfig = errors.New("nats sink: bad configuration")

// Sink publishes records to NATS JetStream. Create it with New and Close
// it when the engine has stopped.
type Sink struct {
	nc      *natsio.Conn
	own     bool // nc is the sink's: Close closes it
	js      jetstream.JetStream
	subject string
	stream  jetstream.StreamConfig // Name "" when the sink creates none
	timeout time.Duration

	mu      sync.Mutex
	ensured bool // the stream exists
}

var _ sink.Sink = (*Sink)(nil)

// New returns a Sink for cfg. Its connection keeps trying to reach the
// server in the background when it is down (then Publish fails until it
// is back).
func New(cfg Config) (*Sink, error) {
	if cfg.Timeout < 0 || cfg.Duplicates < 0 {
		return nil, fmt.Errorf("%w: negative timeout or duplicate window", ErrConfig)
	}
	if cfg.Subject == "" {
		cfg.Subject = DefaultSubject
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if strings.ContainsAny(strings.ReplaceAll(cfg.Subject, sink.ProcessPlaceholder, "x"), " \t\r\n*>") {
		return nil, fmt.Errorf("%w: subject %q: no spaces or wildcards", ErrConfig, cfg.Subject)
	}
	s := &Sink{nc: cfg.Conn, subject: cfg.Subject, timeout: cfg.Timeout}
	if cfg.Stream != "" {
		s.stream = jetstream.StreamConfig{
			Name:       cfg.Stream,
			Subjects:   []string{strings.ReplaceAll(cfg.Subject, sink.ProcessPlaceholder, "*")},
			Duplicates: cfg.Duplicates,
		}
	}
	if s.nc == nil {
		if cfg.URL == "" {
			cfg.URL = natsio.DefaultURL
		}
		opts := append([]natsio.Option{natsio.RetryOnFailedConnect(true), natsio.MaxReconnects(-1), natsio.Timeout(cfg.Timeout)}, cfg.Options...)
		nc, err := natsio.Connect(cfg.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("nats sink: connect to %s: %w", cfg.URL, err)
		}
		s.nc, s.own = nc, true
	}
	js, err := jetstream.New(s.nc, jetstream.WithPublishAsyncTimeout(cfg.Timeout), jetstream.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.js = js
	return s, nil
}

// Publish implements sink.Sink: in rounds, the next message of every
// instance of the batch goes out, then the round's acknowledgements are
// awaited; the first failure ends the call.
func (s *Sink) Publish(ctx context.Context, msgs []sink.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := s.ensureStream(ctx); err != nil {
		return err
	}
	var order []int64
	queues := map[int64][]sink.Message{}
	for _, m := range msgs {
		if _, ok := queues[m.Instance]; !ok {
			order = append(order, m.Instance)
		}
		queues[m.Instance] = append(queues[m.Instance], m)
	}
	for {
		var round []jetstream.PubAckFuture
		for _, id := range order {
			q := queues[id]
			if len(q) == 0 {
				continue
			}
			queues[id] = q[1:]
			f, err := s.js.PublishMsgAsync(s.message(q[0]))
			if err != nil {
				return fmt.Errorf("nats: publish record %s: %w", q[0].ID, err)
			}
			round = append(round, f)
		}
		if len(round) == 0 {
			return nil
		}
		for _, f := range round {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("nats: publish record %s: %w", f.Msg().Header.Get(jetstream.MsgIDHeader), err)
			case <-ctx.Done():
				return fmt.Errorf("nats: publish: %w", ctx.Err())
			}
		}
	}
}

// message is m as a NATS message.
func (s *Sink) message(m sink.Message) *natsio.Msg {
	msg := natsio.NewMsg(sink.Topic(s.subject, m))
	msg.Data = m.Payload
	for k, v := range m.Headers() {
		msg.Header.Set(k, v)
	}
	msg.Header.Set(jetstream.MsgIDHeader, m.ID)
	return msg
}

// ensureStream creates the configured stream once, unless it exists.
func (s *Sink) ensureStream(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream.Name == "" || s.ensured {
		return nil
	}
	_, err := s.js.Stream(ctx, s.stream.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = s.js.CreateStream(ctx, s.stream)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // created meanwhile
		}
	}
	if err != nil {
		return fmt.Errorf("nats: stream %s: %w", s.stream.Name, err)
	}
	s.ensured = true
	return nil
}

// Close closes the sink's connection (not a Config.Conn).
func (s *Sink) Close() {
	if s.own {
		s.nc.Close()
	}
}

// ParseURL reads a sink URL, nats://HOST:PORT[,HOST:PORT...][/SUBJECT],
// as `goxpdl serve --publish` takes it. SUBJECT may contain
// sink.ProcessPlaceholder ("nats://127.0.0.1:4222/goxpdl.{process}");
// without it, DefaultSubject. The query string may set stream (the
// stream to create if missing; default GOXPDL, "" for none),
// duplicates and timeout (Go durations). User and password in the URL
// are the connection's.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if u.Scheme != "nats" || u.Host == "" {
		return Config{}, fmt.Errorf("%w: %q: want nats://HOST:PORT[/SUBJECT]", ErrConfig, raw)
	}
	server := url.URL{Scheme: "nats", User: u.User}
	var servers []string
	for h := range strings.SplitSeq(u.Host, ",") {
		server.Host = h
		servers = append(servers, server.String())
	}
	cfg := Config{URL: strings.Join(servers, ","), Subject: strings.TrimPrefix(u.Path, "/"), Stream: "GOXPDL"}
	for k, v := range u.Query() {
		switch k {
		case "stream":
			cfg.Stream = v[0]
		case "timeout", "duplicates":
			d, err := time.ParseDuration(v[0])
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("%w: %s %q, want a positive duration", ErrConfig, k, v[0])
			}
			if k == "timeout" {
				cfg.Timeout = d
			} else {
				cfg.Duplicates = d
			}
		default:
			return Config{}, fmt.Errorf("%w: unknown parameter %q", ErrConfig, k)
		}
	}
	return cfg, nil
}
