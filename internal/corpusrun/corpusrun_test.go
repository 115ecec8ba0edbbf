package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParseProcesses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		doc   string
		ids   []string
		calls map[string][]string
	}{
		{
			name: "XPDL 1 with a prefix, sorted, a subflow call",
			doc: `<?xml version="1.0" encoding="UTF-8"?>
<xpdl:Package xmlns:xpdl="http://www.wfmc.org/2002/XPDL1.0" Id="p">
 <xpdl:WorkflowProcesses>
  <xpdl:WorkflowProcess Id="main"><xpdl:Activities><xpdl:Activity Id="a">
   <xpdl:Implementation><xpdl:SubFlow Id="sub" Execution="SYNCHR"/></xpdl:Implementation>
  </xpdl:Activity></xpdl:Activities></xpdl:WorkflowProcess>
  <xpdl:WorkflowProcess AccessLevel="PRIVATE"
      Id="sub" Name="Sub"/>
  <xpdl:WorkflowProcess Id="alone"/>
 </xpdl:WorkflowProcesses>
</xpdl:Package>`,
			ids:   []string{"alone", "main", "sub"},
			calls: map[string][]string{"main": {"sub"}},
		},
		{
			name: "XPDL 2 default namespace, a comment before the declaration, Latin-1",
			doc: `<!-- licence -->
<?xml version="1.0" encoding="ISO-8859-1"?>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="p"><WorkflowProcesses>
 <WorkflowProcess Id="1" Name="x"><ActivitySets><ActivitySet Id="s"><Activities><Activity Id="a">
  <Implementation><SubFlow Id="2"/></Implementation></Activity></Activities></ActivitySet></ActivitySets>
 </WorkflowProcess>
 <WorkflowProcess Id="2"/>
</WorkflowProcesses></Package>`,
			ids:   []string{"1", "2"},
			calls: map[string][]string{"1": {"2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ids, calls, err := parseProcesses([]byte(tt.doc))
			require.NoError(t, err)
			require.Equal(t, tt.ids, ids)
			require.Equal(t, tt.calls, calls)
		})
	}
}

func TestSubflowsAreCalledByAnotherProcessOfTheFolder(t *testing.T) {
	t.Parallel()
	files := []*corpusFile{
		{Dir: "xpdl1", Name: "main.xpdl", calls: map[string][]string{"main": {"sub"}, "rec": {"rec"}}},
		{Dir: "xpdl1", Name: "sub.xpdl", Processes: []string{"sub"}},
		{Dir: "xpdl2", Name: "sub.xpdl", Processes: []string{"sub"}},
	}
	require.Equal(t, map[subflowKey]bool{{"xpdl1", "sub"}: true}, subflows(files))
}

func TestStuckReason(t *testing.T) {
	t.Parallel()
	tests := []struct{ stderr, want string }{
		{
			"time=x level=WARN msg=retry\ninstance 1 of process P: Locking: AND-join d can never fire\n",
			"Locking: AND-join d can never fire",
		},
		{
			"instance 1 of process P: Running; activity a (instance 7 of process instance 2) is Abnormal: boom; open work items: 3 (clerk), 12 (boss)\n",
			"Running; activity a is Abnormal: boom; open work items: (clerk), (boss)",
		},
		{"panic: no\n", "exit 3 without a summary line: panic: no"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, stuckReason(tt.stderr))
	}
}

func TestTraceCounterCountsStartsAcrossWrites(t *testing.T) {
	t.Parallel()
	trace := `{"type":"process.started","process":"P"}
{"type":"activity.started","process":"P","activity":"a"}
{"type":"activity.completed","process":"P","activity":"a"}
{"type":"activity.started","process":"S","activity":"b"}
{"type":"activity.started","process":"P","activity":"a"}`
	c := &traceCounter{}
	for chunk := range slicesOf([]byte(trace), 7) {
		n, err := c.Write(chunk)
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	c.flush()
	require.Equal(t, 3, c.started)
	require.Equal(t, []string{"a"}, c.repeated(2, "P"))
	require.Equal(t, []string{"S/b", "a"}, c.repeated(1, "P"))
}

// slicesOf yields b in pieces of n bytes.
func slicesOf(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}

func TestTailBufferKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 4}
	for _, s := range []string{"ab", "cdef", "ghij", "k"} {
		_, err := b.Write([]byte(s))
		require.NoError(t, err)
	}
	require.Equal(t, "abcd", b.head())
	require.Equal(t, "abcd\nhijk", b.String())
}

func TestCellAndShorten(t *testing.T) {
	t.Parallel()
	require.Equal(t, `a \| b &lt;Package> c`, cell("a | b\n <Package>  c"))
	require.Equal(t, "`x \\| y`", code("x | y"))
	require.Equal(t, "abc", shorten("abc", 3))
	require.Equal(t, "ab…", shorten("abcd", 3))
}

func TestMissingCorpusIsAnError(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := mainErr([]string{"-corpus", filepath.Join(t.TempDir(), "nope"), "-out", filepath.Join(t.TempDir(), "out.md")}, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "no corpus at")
}

// The table of files deployed together names only files of the corpus:
// one that is missing is an error, so that the table cannot go stale.
func TestTogetherTableMustNameCorpusFiles(t *testing.T) {
	t.Parallel()
	var files []*corpusFile
	add := func(rel string) {
		dir, name, _ := strings.Cut(rel, "/")
		files = append(files, &corpusFile{Dir: dir, Name: name})
	}
	for _, g := range deployedTogether {
		add(g.File)
		for _, w := range g.With {
			add(w)
		}
	}
	for _, n := range notInCorpus {
		add(n.File)
	}
	require.NoError(t, checkTogether(files))
	require.Equal(t, []string{"xpdl1/bonita-asyncSubChild.xpdl"}, withFor("xpdl1/bonita-asyncSubParent.xpdl"))
	require.Nil(t, withFor("xpdl1/bonita-asyncSubChild.xpdl"))
	require.Error(t, checkTogether(files[1:]))
}
