// Command uploadcost measures what one upload of an XPDL file costs the
// process that takes it: the console's upload (multipart body, engine
// DeployAs on an in-memory SQLite database), or the engine's Deploy or
// xpdl.Read alone, on a file it generates in one of several shapes up to
// a size. It prints the time, the bytes allocated, the peak of the heap
// in use (sampled every few milliseconds) and the process's peak
// resident memory:
//
//	go run ./internal/uploadcost -shape dense -size 16000000 -lifted
//
// The shapes (docs/security.md, "What an upload costs"):
//
//   - chain: processes of 2,000 activities each (tools, manual steps and
//     routes with conditions, performers and layout extended
//     attributes), about 900 bytes an activity, as real exports look;
//   - wide: one process of empty activities (<Activity Id="1f"/>), as
//     many as fit: the model's worst case;
//   - dense: empty vendor elements (<a/>), up to the reader's element
//     limit: the XML tree's worst case;
//   - attrs: the same with one attribute each (<b c="1"/>).
//
// It is a development tool, not part of goxpdl. Run it alone: the figures
// are the process's own, and other work on the machine shows in the
// time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

func mainErr(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("uploadcost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shape := fs.String("shape", "chain", "chain, wide, dense or attrs")
	size := fs.Int("size", console.DefaultMaxUploadBytes-multipartRoom, "the file's size in bytes, at most (default: the largest the console takes)")
	mode := fs.String("mode", "upload", "upload (the console), deploy (engine.Deploy) or read (xpdl.Read)")
	lifted := fs.Bool("lifted", false, "lift the definition limits (xpdl.Limits) and the upload limit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	src, err := generate(*shape, *size)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "uploadcost:", err)
		return 2
	}
	m, err := measure(*mode, src, *lifted)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "uploadcost:", err)
		return 1
	}
	_, _ = fmt.Fprintf(stdout, "shape=%s size=%d mode=%s lifted=%v: %v, allocated %d MB, heap peak %d MB, resident peak %d MB; %s\n",
		*shape, len(src), *mode, *lifted, m.elapsed.Round(time.Millisecond), m.allocated>>20, m.heapPeak>>20, m.rssPeak>>20, m.outcome)
	return 0
}

// multipartRoom is more than what the multipart body of one upload adds
// to its file.
const multipartRoom = 1024

// generate returns an XPDL file of the shape, at most size bytes long.
func generate(shape string, size int) ([]byte, error) {
	const head = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="cost" Name="Upload cost">
<PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>uploadcost</Vendor></PackageHeader>
<Script Type="text/javascript"/>
`
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(head)
	var item func(i int) string
	open, closing := "", ""
	switch shape {
	case "chain":
		return chain(size), nil
	case "wide":
		open = `<WorkflowProcesses><WorkflowProcess Id="p"><Activities>`
		closing = "</Activities></WorkflowProcess></WorkflowProcesses></Package>\n"
		item = func(i int) string { return fmt.Sprintf(`<Activity Id="%x"/>`, i) }
	case "dense", "attrs":
		open = `<WorkflowProcesses><WorkflowProcess Id="p"><Activities><Activity Id="a"><Route/></Activity></Activities></WorkflowProcess></WorkflowProcesses><v:Junk xmlns:v="urn:vendor">`
		closing = "</v:Junk></Package>\n"
		el := "<v:a/>"
		if shape == "attrs" {
			el = `<v:b c="1"/>`
		}
		item = func(int) string { return el }
	default:
		return nil, fmt.Errorf("unknown shape %q (chain, wide, dense or attrs)", shape)
	}
	b.WriteString(open)
	// Element count stays under the reader's limit.
	for i := 0; i < xpdl.DefaultMaxElements-16; i++ {
		s := item(i)
		if b.Len()+len(s)+len(closing) > size {
			break
		}
		b.WriteString(s)
	}
	b.WriteString(closing)
	return b.Bytes(), nil
}

// chainActivities is how many activities one process of the chain shape
// has.
const chainActivities = 2000

// chain returns a package of processes shaped like real exports, at most
// size bytes long.
func chain(size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="cost" Name="Upload cost">
<PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>uploadcost</Vendor></PackageHeader>
<Script Type="text/javascript"/>
<Participants><Participant Id="clerk" Name="Clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
<Applications><Application Id="compute"><FormalParameters><FormalParameter Id="x" Mode="INOUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter></FormalParameters></Application></Applications>
<DataFields><DataField Id="amount"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField></DataFields>
<WorkflowProcesses>
`)
	const closing = "</WorkflowProcesses></Package>\n"
	layout := func(i int) string {
		return fmt.Sprintf(`<ExtendedAttributes><ExtendedAttribute Name="JaWE_GRAPH_PARTICIPANT_ID" Value="clerk"/><ExtendedAttribute Name="JaWE_GRAPH_OFFSET" Value="%d,%d"/></ExtendedAttributes>`, 100+i%50*160, 60)
	}
	for p := 0; ; p++ {
		var proc strings.Builder
		fmt.Fprintf(&proc, "<WorkflowProcess Id=\"p%d\" Name=\"Process %d\"><ProcessHeader DurationUnit=\"D\"/><Activities>\n", p, p)
		for i := range chainActivities {
			var impl string
			switch i % 3 {
			case 0:
				impl = `<Implementation><Tool Id="compute" Type="APPLICATION"><ActualParameters><ActualParameter>amount</ActualParameter></ActualParameters></Tool></Implementation><Performer>clerk</Performer><StartMode><Automatic/></StartMode><FinishMode><Automatic/></FinishMode>`
			case 1:
				impl = `<Implementation><No/></Implementation><Performer>clerk</Performer><StartMode><Manual/></StartMode><FinishMode><Manual/></FinishMode>`
			default:
				impl = `<Route/>`
			}
			fmt.Fprintf(&proc, "<Activity Id=\"a%d\" Name=\"Step %d of process %d\">%s%s</Activity>\n", i, i, p, impl, layout(i))
		}
		proc.WriteString("</Activities><Transitions>\n")
		for i := 1; i < chainActivities; i++ {
			cond := ""
			if i%3 == 0 {
				cond = fmt.Sprintf(`<Condition Type="CONDITION">amount &gt;= %d</Condition>`, -i)
			}
			fmt.Fprintf(&proc, "<Transition Id=\"t%d\" From=\"a%d\" To=\"a%d\">%s</Transition>\n", i, i-1, i, cond)
		}
		proc.WriteString("</Transitions></WorkflowProcess>\n")
		if b.Len()+proc.Len()+len(closing) > size {
			if p == 0 {
				b.WriteString(`<WorkflowProcess Id="p0"><Activities><Activity Id="a0"><Route/></Activity></Activities></WorkflowProcess>`)
			}
			break
		}
		b.WriteString(proc.String())
	}
	b.WriteString(closing)
	return b.Bytes()
}

// clock is what the measurement is timed by: the wall clock.
var clock = timer.Real()

// measured is what one upload cost.
type measured struct {
	elapsed                      time.Duration
	allocated, heapPeak, rssPeak uint64
	outcome                      string
}

// measure deploys src the way mode says, on a fresh engine, and measures
// it. The engine and the request body are made before the measurement
// starts.
func measure(mode string, src []byte, lifted bool) (measured, error) {
	ctx := context.Background()
	db, err := gormstore.OpenSQLite(":memory:")
	if err != nil {
		return measured{}, err
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	cfg := engine.Config{DB: db, Logger: slog.New(slog.DiscardHandler)}
	opts := console.Options{Logger: slog.New(slog.DiscardHandler)}
	if lifted {
		big := 1 << 40
		cfg.DefinitionLimits = xpdl.Limits{Processes: big, Activities: big, Transitions: big, ActivitySets: big,
			Nesting: big, DataFields: big, FormalParameters: big, Participants: big, Applications: big,
			SubFlows: big, Deadlines: big, ExpressionBytes: big, ExtendedAttributeBytes: big}
		cfg.MaxDefinitionBytes = 1 << 40
		opts.MaxUploadBytes = 1 << 40
	}
	eng, err := engine.New(cfg)
	if err != nil {
		return measured{}, err
	}
	h, err := console.New(eng, opts)
	if err != nil {
		return measured{}, err
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", "upload.xpdl")
	if err == nil {
		_, err = part.Write(src)
	}
	if err == nil {
		err = w.WriteField("reason", "uploadcost")
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return measured{}, err
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			tick := clock.NewTimer(2 * time.Millisecond)
			select {
			case <-done:
				tick.Stop()
				return
			case <-tick.C():
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	start := clock.Now()
	var out measured
	switch mode {
	case "upload":
		req := httptest.NewRequest(http.MethodPost, "/api/definitions", &body)
		req.Header.Set("Content-Type", w.FormDataContentType())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out.outcome = fmt.Sprintf("HTTP %d", rec.Code)
		var answer struct {
			Error struct{ Message string } `json:"error"`
		}
		if rec.Code != http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &answer) == nil {
			out.outcome += ": " + firstLine(answer.Error.Message)
		}
	case "deploy":
		_, err := eng.Deploy(ctx, src)
		out.outcome = outcome(err)
	case "read":
		pkg, err := xpdl.Read(bytes.NewBuffer(src), &xpdl.ReadOpts{MaxBytes: int64(len(src))})
		out.outcome = outcome(err)
		runtime.KeepAlive(pkg)
	default:
		return measured{}, fmt.Errorf("unknown mode %q (upload, deploy or read)", mode)
	}
	out.elapsed = clock.Now().Sub(start)
	close(done)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	out.allocated = after.TotalAlloc - before.TotalAlloc
	out.heapPeak = max(peak.Load(), after.HeapInuse) - before.HeapInuse
	out.rssPeak = residentPeak()
	runtime.KeepAlive(src)
	return out, nil
}

func outcome(err error) string {
	if err == nil {
		return "deployed"
	}
	var le *xpdl.LimitError
	if errors.As(err, &le) {
		return "refused: " + le.Msg
	}
	return "refused: " + firstLine(err.Error())
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
