package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// upload is one file of a multipart upload.
type upload struct{ name, content string }

// postFiles posts files in "file" fields and the other fields as a
// multipart form.
func (f *fixture) postFiles(path string, files []upload, fields url.Values, header map[string]string) response {
	f.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, u := range files {
		part, err := w.CreateFormFile("file", u.name)
		require.NoError(f.t, err)
		_, err = part.Write([]byte(u.content))
		require.NoError(f.t, err)
	}
	for k, vs := range fields {
		for _, v := range vs {
			require.NoError(f.t, w.WriteField(k, v))
		}
	}
	require.NoError(f.t, w.Close())
	h := map[string]string{"Content-Type": w.FormDataContentType()}
	for k, v := range header {
		h[k] = v
	}
	return f.do(http.MethodPost, path, &body, h)
}

// deployments counts the deployed versions.
func (f *fixture) deployments() int {
	f.t.Helper()
	deps, err := f.eng.Deployments(context.Background())
	require.NoError(f.t, err)
	return len(deps)
}

// instanceCount counts the process instances.
func (f *fixture) instanceCount() int {
	f.t.Helper()
	page, err := f.eng.Instances(context.Background(), engine.InstanceFilter{Limit: 1000})
	require.NoError(f.t, err)
	return len(page.Instances)
}

// deployFile deploys a file of testdata.
func (f *fixture) deployFile(name string) engine.Deployment {
	f.t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	require.NoError(f.t, err)
	d, err := f.eng.Deploy(context.Background(), src)
	require.NoError(f.t, err)
	return d
}

// reviewSource is the review process's XPDL.
func reviewSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/review.xpdl")
	require.NoError(t, err)
	return string(src)
}

// versionJSON is a version in the API's answers.
type versionJSON struct {
	ID        int64            `json:"id"`
	Package   string           `json:"package"`
	Version   int              `json:"version"`
	Processes []string         `json:"processes"`
	Group     int64            `json:"group"`
	File      string           `json:"file"`
	Instances map[string]int64 `json:"instances"`
	Open      int64            `json:"open"`
}

// problemsErr is the API's error body with an invalid definition's
// problems and the field refused.
type problemsErr struct {
	Error struct {
		Code     string        `json:"code"`
		Message  string        `json:"message"`
		Problems xpdl.Problems `json:"problems"`
		Field    string        `json:"field"`
	} `json:"error"`
}

func TestDefinitionPages(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		f.start(nil)
		f.start(map[string]any{"fail": true})
		typed := f.deployFile("types.xpdl")
		id := f.def.ID

		list := f.get("/definitions")
		require.Equal(t, http.StatusOK, list.status, list.body)
		assert.Contains(t, list.body, fmt.Sprintf(`data-definition="%d"`, id))
		assert.Contains(t, list.body, fmt.Sprintf(`data-definition="%d"`, typed.ID))
		assert.Contains(t, list.body, `enctype="multipart/form-data"`, "the upload form")
		assert.Contains(t, list.body, fmt.Sprintf(`href="/instances?definition=%d&amp;state=Running"`, id), "the counts link to the instances")

		api := decode[struct {
			Packages []struct {
				ID       string        `json:"id"`
				Versions []versionJSON `json:"versions"`
				Open     int64         `json:"open"`
			} `json:"packages"`
		}](t, f.get("/api/definitions"))
		require.Len(t, api.Packages, 2)
		assert.Equal(t, "review", api.Packages[0].ID)
		require.Len(t, api.Packages[0].Versions, 1)
		v := api.Packages[0].Versions[0]
		assert.Equal(t, id, v.ID)
		assert.Equal(t, []string{"review"}, v.Processes)
		assert.Equal(t, map[string]int64{"Running": 2}, v.Instances, "one waits at Review, one has an incident")
		assert.Equal(t, int64(2), v.Open)
		assert.Equal(t, "types", api.Packages[1].ID)

		page := f.get(fmt.Sprintf("/definitions/%d", id))
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.Contains(t, page.body, "<svg", "each process is drawn")
		assert.Contains(t, page.body, `data-activity="Review"`)
		assert.Contains(t, page.body, fmt.Sprintf(`action="/definitions/%d/start"`, id))
		assert.Contains(t, page.body, `name="variables.amount" type="number"`, "an INTEGER is a number input")
		assert.Contains(t, page.body, `<select name="variables.fail">`, "a BOOLEAN is a select")
		assert.Contains(t, page.body, `name="idempotency_key" value="console-`)
		assert.Contains(t, page.body, fmt.Sprintf(`hx-get="/definitions/%d/explain?fragment=live-explain"`, id))

		typedPage := f.get(fmt.Sprintf("/definitions/%d", typed.ID))
		require.Equal(t, http.StatusOK, typedPage.status, typedPage.body)
		for _, input := range []string{
			`name="variables.price" type="number" step="any"`, `name="variables.due" type="date"`,
			`name="variables.at" type="datetime-local"`, `name="variables.opens" type="time"`,
			`<textarea name="variables.tags"`, `<option>north</option>`, `name="variables.customer"`,
		} {
			assert.Contains(t, typedPage.body, input)
		}
		assert.NotContains(t, typedPage.body, `name="variables.result"`, "an OUT parameter is not given at the start")

		detail := decode[struct {
			Definition versionJSON `json:"definition"`
			Name       string      `json:"name"`
			Processes  []struct {
				ID        string `json:"id"`
				Main      bool   `json:"main"`
				Variables []struct {
					Name    string `json:"name"`
					Type    string `json:"type"`
					Initial string `json:"initial"`
				} `json:"variables"`
			} `json:"processes"`
		}](t, f.get(fmt.Sprintf("/api/definitions/%d", id)))
		assert.Equal(t, "Review", detail.Name)
		assert.Equal(t, id, detail.Definition.ID)
		require.Len(t, detail.Processes, 1)
		assert.True(t, detail.Processes[0].Main)
		require.Len(t, detail.Processes[0].Variables, 2)
		assert.Equal(t, "amount", detail.Processes[0].Variables[1].Name)
		assert.Equal(t, "INTEGER", detail.Processes[0].Variables[1].Type)
		assert.Equal(t, "100", detail.Processes[0].Variables[1].Initial)

		src := f.get(fmt.Sprintf("/definitions/%d/source", id))
		require.Equal(t, http.StatusOK, src.status)
		assert.Contains(t, src.body, "&lt;WorkflowProcess Id=&#34;review&#34;", "the source is shown as text")
		apiSrc := decode[struct {
			Source string `json:"source"`
		}](t, f.get(fmt.Sprintf("/api/definitions/%d/source", id)))
		assert.Equal(t, reviewSource(t), apiSrc.Source)

		file := f.get(fmt.Sprintf("/definitions/%d/file", id))
		require.Equal(t, http.StatusOK, file.status)
		assert.Equal(t, reviewSource(t), file.body)
		assert.Contains(t, file.header.Get("Content-Disposition"), "attachment")
		assert.Equal(t, "application/octet-stream", file.header.Get("Content-Type"))
		assert.Contains(t, file.header.Get("Content-Security-Policy"), "sandbox")

		explain := f.get(fmt.Sprintf("/definitions/%d/explain", id))
		require.Equal(t, http.StatusOK, explain.status, explain.body)
		assert.Contains(t, explain.body, "rewrites: none; the model runs as written")
		fragment := f.get(fmt.Sprintf("/definitions/%d/explain?fragment=live-explain", id))
		require.Equal(t, http.StatusOK, fragment.status)
		assert.NotContains(t, fragment.body, "<html")
		assert.Contains(t, fragment.body, "Check    Tool")
		apiExplain := decode[struct {
			Explain xpdl.Explanation `json:"explain"`
		}](t, f.get(fmt.Sprintf("/api/definitions/%d/explain", id)))
		require.Len(t, apiExplain.Explain.Processes, 1)
		assert.Equal(t, "review", apiExplain.Explain.Processes[0].ID)
		assert.Len(t, apiExplain.Explain.Processes[0].Activities, 3)
		assert.Empty(t, apiExplain.Explain.Rewrites)

		// Unknown and malformed ids, on every page and resource.
		for _, suffix := range []string{"", "/source", "/explain", "/file"} {
			for _, prefix := range []string{"", "/api"} {
				if suffix == "/file" && prefix == "/api" {
					continue
				}
				res := f.get(prefix + "/definitions/999999" + suffix)
				assert.Equal(t, http.StatusNotFound, res.status, "%s%s: %s", prefix, suffix, res.body)
				res = f.get(prefix + "/definitions/x" + suffix)
				assert.Equal(t, http.StatusBadRequest, res.status, "%s%s: %s", prefix, suffix, res.body)
			}
		}
		assert.Equal(t, "not_found", decode[apiErr](t, f.get("/api/definitions/999999")).Error.Code)
	})
}

// hostile inputs, each refused by xpdl.Read's limits.
var (
	laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="lolz"><PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader><Script>&lol3;</Script></Package>`
	deep = `<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="deep">` + strings.Repeat("<a>", 500) + strings.Repeat("</a>", 500) + `</Package>`
)

func TestDeploy(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})

		// The API: one file, a new version of review.
		res := f.postFiles("/api/definitions", []upload{{"review.xpdl", reviewSource(t)}}, nil, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		got := decode[struct {
			Deployments []versionJSON `json:"deployments"`
		}](t, res)
		require.Len(t, got.Deployments, 1)
		assert.Equal(t, "review", got.Deployments[0].Package)
		assert.Equal(t, 2, got.Deployments[0].Version)
		assert.Equal(t, "review.xpdl", got.Deployments[0].File)

		// A page's form: to the new version, with a message.
		res = f.postFiles("/definitions", []upload{{"review.xpdl", reviewSource(t)}}, url.Values{"reason": {"v3"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		deps, err := f.eng.Versions(context.Background(), "review")
		require.NoError(t, err)
		require.Len(t, deps, 3)
		assert.Equal(t, fmt.Sprintf("/definitions/%d", deps[2].ID), res.header.Get("Location"))
		assert.Contains(t, res.header.Get("Set-Cookie"), "goxpdl_flash=Deployed")

		// Two files deployed together: the parent's subflow is in the
		// other file, which neither could be deployed without.
		res = f.postFiles("/definitions", []upload{{"parent.xpdl", parentXPDL}, {"child.xpdl", childXPDL}}, nil, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusNoContent, res.status, res.body)
		assert.Equal(t, "/definitions", res.header.Get("HX-Location"))
		parent, err := f.eng.Versions(context.Background(), "parent")
		require.NoError(t, err)
		child, err := f.eng.Versions(context.Background(), "child")
		require.NoError(t, err)
		require.Len(t, parent, 1)
		require.Len(t, child, 1)
		assert.Equal(t, parent[0].ID, child[0].Group, "one deployment")
		assert.Equal(t, "child.xpdl", child[0].File)
	})
}

// parentXPDL calls process "work" of childXPDL as a subflow.
const parentXPDL = `<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="parent">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader>
  <ExternalPackages><ExternalPackage Id="child" href="child.xpdl"/></ExternalPackages>
  <WorkflowProcesses><WorkflowProcess Id="main">
    <Activities><Activity Id="call"><Implementation><SubFlow Id="work" PackageRef="child"/></Implementation></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

const childXPDL = `<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="child">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="work">
    <Activities><Activity Id="w"><Implementation><No/></Implementation></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// invalidXPDL has a transition to an activity that does not exist, on
// line 5.
const invalidXPDL = `<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="broken">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <Activities><Activity Id="a"><Implementation><No/></Implementation></Activity></Activities>
    <Transitions><Transition Id="t" From="a" To="nowhere"/></Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// timerStartXPDL is a package whose process starts by a timer with the
// TimeCycle cycle.
func timerStartXPDL(cycle string) string {
	return `<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="ticks">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor>t</Vendor><Created>2026</Created></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="tick">
    <Activities>
      <Activity Id="Tick"><Event><StartEvent Trigger="Timer"><TriggerTimer><TimeCycle>` + cycle + `</TimeCycle></TriggerTimer></StartEvent></Event></Activity>
      <Activity Id="Work"><Implementation><No/></Implementation></Activity>
    </Activities>
    <Transitions><Transition Id="t1" From="Tick" To="Work"/></Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
}

func TestDeployRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		before := f.deployments()
		cases := []struct {
			name    string
			files   []upload
			status  int
			code    string
			problem string // the code of a problem the answer lists
			line    int    // its line, when it matters
		}{
			{"invalid XPDL", []upload{{"broken.xpdl", invalidXPDL}}, http.StatusUnprocessableEntity, "invalid", "", 5},
			{"malformed XML", []upload{{"m.xpdl", "<Package>\n<oops></Package>"}}, http.StatusUnprocessableEntity, "invalid", "syntax", 2},
			{"not XPDL", []upload{{"n.xml", "<html/>"}}, http.StatusUnprocessableEntity, "invalid", "not-xpdl", 1},
			{"empty file", []upload{{"e.xpdl", ""}}, http.StatusUnprocessableEntity, "invalid", "", 0},
			{"entity expansion", []upload{{"lolz.xpdl", laughs}}, http.StatusUnprocessableEntity, "invalid", "doctype", 2},
			{"deep nesting", []upload{{"deep.xpdl", deep}}, http.StatusUnprocessableEntity, "invalid", "limit", 1},
			{"over a definition limit", []upload{{"nested.xpdl", xpdltest.Sized("Nesting", xpdl.DefaultMaxNesting+1)}}, http.StatusUnprocessableEntity, "invalid", "limit", 11},
			{"one of two invalid", []upload{{"review.xpdl", reviewSource(t)}, {"broken.xpdl", invalidXPDL}}, http.StatusUnprocessableEntity, "invalid", "", 5},
			{"subflow in no file", []upload{{"parent.xpdl", parentXPDL}}, http.StatusUnprocessableEntity, "invalid", "", 0},
			{"a timer that repeats every millisecond", []upload{{"t.xpdl", timerStartXPDL("R/PT0.001S")}}, http.StatusUnprocessableEntity, "invalid", "", 0},
			{"a timer that cannot be worked out", []upload{{"t.xpdl", timerStartXPDL("every now and then")}}, http.StatusUnprocessableEntity, "invalid", "", 0},
			{"too large", []upload{{"big.xpdl", strings.Repeat("<!-- padding -->", (17<<20)/16)}}, http.StatusRequestEntityTooLarge, "too_large", "", 0},
			{"no file", nil, http.StatusBadRequest, "bad_request", "", 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := f.postFiles("/api/definitions", c.files, url.Values{"reason": {"test"}}, nil)
				require.Equal(t, c.status, res.status, res.body)
				e := decode[problemsErr](t, res)
				assert.Equal(t, c.code, e.Error.Code, e.Error.Message)
				if c.problem != "" {
					require.NotEmpty(t, e.Error.Problems)
					assert.Equal(t, c.problem, e.Error.Problems[0].Code, e.Error.Problems)
				}
				if c.line != 0 {
					require.NotEmpty(t, e.Error.Problems)
					assert.Equal(t, c.line, e.Error.Problems[0].Line, e.Error.Problems)
					assert.Positive(t, e.Error.Problems[0].Col)
				}
				assert.Equal(t, before, f.deployments(), "nothing deployed")
			})
		}

		// A JSON body is not an upload.
		res := f.postJSON("/api/definitions", map[string]any{"file": invalidXPDL})
		require.Equal(t, http.StatusBadRequest, res.status, res.body)

		// A page shows the problems at line:column; htmx gets them as a
		// fragment for the message area.
		res = f.postFiles("/definitions", []upload{{"broken.xpdl", invalidXPDL}}, nil, nil)
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		assert.Contains(t, res.body, "<html")
		assert.Regexp(t, `<li><code>5:\d+</code> error: `, res.body)
		assert.Contains(t, res.body, "nowhere")
		res = f.postFiles("/definitions", []upload{{"broken.xpdl", invalidXPDL}}, nil, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		assert.Equal(t, "#messages", res.header.Get("HX-Retarget"))
		assert.NotContains(t, res.body, "<html")
		assert.Contains(t, res.body, `class="problems"`)
		assert.Equal(t, before, f.deployments(), "nothing deployed")
	})
}

// TestDeployOverALimit: an upload over one of the engine's definition
// limits (Config.DefinitionLimits) is refused with the limit named, at
// its line and column, on the API and on the page, and nothing is
// deployed; one at the limit deploys.
func TestDeployOverALimit(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{}, func(c *engine.Config) { c.DefinitionLimits.Activities = 3 })
		before := f.deployments()
		over := xpdltest.Sized("Activities", 4)
		want := `process "p" has 4 activities (its activity sets' included), more than the limit of 3 (Limits.Activities)`

		res := f.postFiles("/api/definitions", []upload{{"four.xpdl", over}}, url.Values{"reason": {"test"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, res.body)
		e := decode[problemsErr](t, res)
		assert.Equal(t, "invalid", e.Error.Code)
		require.Len(t, e.Error.Problems, 1)
		p := e.Error.Problems[0]
		assert.Equal(t, "limit", p.Code)
		assert.Equal(t, want, p.Message)
		assert.Equal(t, "four.xpdl", p.File)
		assert.Equal(t, []int{11, 22}, []int{p.Line, p.Col}, "the process's WorkflowProcess element")
		assert.Equal(t, before, f.deployments(), "nothing deployed")

		page := f.postFiles("/definitions", []upload{{"four.xpdl", over}}, nil, nil)
		require.Equal(t, http.StatusUnprocessableEntity, page.status)
		assert.Contains(t, page.body, `<li><code>11:22</code> error: `)
		assert.Contains(t, page.body, "(Limits.Activities)")
		assert.Equal(t, before, f.deployments(), "nothing deployed")

		res = f.postFiles("/api/definitions", []upload{{"three.xpdl", xpdltest.Sized("Activities", 3)}}, url.Values{"reason": {"test"}}, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, before+1, f.deployments())
	})
}

// TestUploadSize: an upload's body may be Options.MaxUploadBytes long
// (default console.DefaultMaxUploadBytes); a longer one is refused with
// 413 naming the limit, and nothing is deployed.
func TestUploadSize(t *testing.T) {
	t.Parallel()
	f := newFixture(t, openSQLite(t), console.Options{MaxUploadBytes: 20_000})
	before := f.deployments()
	small := xpdltest.Sized("Activities", 100)
	require.Less(t, len(small), 19_000)
	res := f.postFiles("/api/definitions", []upload{{"small.xpdl", small}}, url.Values{"reason": {"test"}}, nil)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Equal(t, before+1, f.deployments())

	large := xpdltest.Sized("Activities", 1000)
	require.Greater(t, len(large), 20_000)
	res = f.postFiles("/api/definitions", []upload{{"large.xpdl", large}}, url.Values{"reason": {"test"}}, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.status, res.body)
	e := decode[problemsErr](t, res)
	assert.Equal(t, "too_large", e.Error.Code)
	assert.Contains(t, e.Error.Message, "larger than 20000 bytes")
	require.Equal(t, before+1, f.deployments(), "nothing more deployed")

	// The default.
	d := newFixture(t, openSQLite(t), console.Options{})
	padded := strings.Replace(small, "<WorkflowProcesses>", "<!--"+strings.Repeat(" ", console.DefaultMaxUploadBytes)+"--><WorkflowProcesses>", 1)
	res = d.postFiles("/api/definitions", []upload{{"padded.xpdl", padded}}, url.Values{"reason": {"test"}}, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.status, res.body)
	assert.Contains(t, decode[problemsErr](t, res).Error.Message, fmt.Sprintf("larger than %d bytes", console.DefaultMaxUploadBytes))
}

func TestStart(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		ctx := context.Background()
		typed := f.deployFile("types.xpdl")

		// Text values, parsed by each one's declared type.
		body := map[string]any{"business_key": "ORDER-7", "variables": map[string]any{
			"count": "7", "price": "2.5", "urgent": "true", "note": "hello", "due": "2026-12-01",
			"at": "2026-12-01T10:30", "opens": "09:15", "region": "north", "tags": `["a","b"]`, "customer": "ACME",
		}}
		res := f.do(http.MethodPost, fmt.Sprintf("/api/definitions/%d/start", typed.ID), strings.NewReader(mustJSON(t, body)),
			map[string]string{"Content-Type": "application/json", "X-User": "alice"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		inst := decode[engine.ProcessInstance](t, res)
		assert.Equal(t, "typed", inst.Process)
		assert.Equal(t, "ORDER-7", inst.BusinessKey)
		assert.Equal(t, typed.ID, inst.DefinitionID)
		vars, err := f.eng.Variables(ctx, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, int64(7), vars["count"])
		assert.InDelta(t, 2.5, vars["price"], 0)
		assert.Equal(t, true, vars["urgent"])
		assert.Equal(t, "2026-12-01", vars["due"])
		assert.Equal(t, "2026-12-01T10:30", vars["at"])
		assert.Equal(t, "09:15", vars["opens"])
		assert.Equal(t, "north", vars["region"])
		assert.Equal(t, []any{"a", "b"}, vars["tags"])
		hist, err := f.eng.History(ctx, engine.HistoryFilter{Instance: inst.ID, Limit: 5})
		require.NoError(t, err)
		require.NotEmpty(t, hist.Entries)
		assert.Equal(t, "alice", hist.Entries[0].Actor, "the start records who started it")

		// JSON values of the right type; an empty field keeps the
		// initial value.
		res = f.postJSON(fmt.Sprintf("/api/definitions/%d/start", typed.ID), map[string]any{"variables": map[string]any{"count": 9, "urgent": false, "note": ""}})
		require.Equal(t, http.StatusOK, res.status, res.body)
		vars, err = f.eng.Variables(ctx, decode[engine.ProcessInstance](t, res).ID)
		require.NoError(t, err)
		assert.Equal(t, int64(9), vars["count"])
		assert.Equal(t, false, vars["urgent"])

		// A page's form: to the new instance; empty fields keep the
		// initial values; a form sent twice starts one instance.
		form := url.Values{"process": {"review"}, "variables.amount": {"250"}, "variables.fail": {""}, "idempotency_key": {"console-test-1"}}
		res = f.postForm(fmt.Sprintf("/definitions/%d/start", f.def.ID), form, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		var id int64
		_, err = fmt.Sscanf(res.header.Get("Location"), "/instances/%d", &id)
		require.NoError(t, err, res.header.Get("Location"))
		vars, err = f.eng.Variables(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, int64(250), vars["amount"])
		assert.Equal(t, false, vars["fail"])
		n := f.instanceCount()
		res = f.postForm(fmt.Sprintf("/definitions/%d/start", f.def.ID), form, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, fmt.Sprintf("/instances/%d", id), res.header.Get("Location"))
		assert.Equal(t, n, f.instanceCount(), "the same key starts nothing new")

		// No process named: the main one.
		res = f.postForm(fmt.Sprintf("/definitions/%d/start", f.def.ID), url.Values{}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
	})
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestStartRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		typed := f.deployFile("types.xpdl")
		start := fmt.Sprintf("/api/definitions/%d/start", typed.ID)
		before := f.instanceCount()
		cases := []struct {
			name   string
			path   string
			body   map[string]any
			status int
			field  string
		}{
			{"not an integer", start, vars("count", "seven"), http.StatusUnprocessableEntity, "variables.count"},
			{"fraction for an integer", start, vars("count", 1.5), http.StatusUnprocessableEntity, "variables.count"},
			{"not a float", start, vars("price", "cheap"), http.StatusUnprocessableEntity, "variables.price"},
			{"not a boolean", start, vars("urgent", "maybe"), http.StatusUnprocessableEntity, "variables.urgent"},
			{"not a date", start, vars("due", "tomorrow"), http.StatusUnprocessableEntity, "variables.due"},
			{"not a date and time", start, vars("at", "noon"), http.StatusUnprocessableEntity, "variables.at"},
			{"not a time", start, vars("opens", "25:00"), http.StatusUnprocessableEntity, "variables.opens"},
			{"not in the enumeration", start, vars("region", "west"), http.StatusUnprocessableEntity, "variables.region"},
			{"not an array", start, vars("tags", "a,b"), http.StatusUnprocessableEntity, "variables.tags"},
			{"a number for a string", start, vars("note", 5), http.StatusUnprocessableEntity, "variables.note"},
			{"unknown variable", start, vars("nope", "1"), http.StatusUnprocessableEntity, "variables.nope"},
			{"an OUT parameter", start, vars("result", "x"), http.StatusUnprocessableEntity, "variables.result"},
			{"unknown process", start, map[string]any{"process": "nope"}, http.StatusUnprocessableEntity, "process"},
			{"business key too long", start, map[string]any{"business_key": strings.Repeat("k", 256)}, http.StatusUnprocessableEntity, "business_key"},
			{"unknown definition", "/api/definitions/999999/start", nil, http.StatusNotFound, ""},
			{"not an id", "/api/definitions/x/start", nil, http.StatusBadRequest, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := f.postJSON(c.path, c.body)
				require.Equal(t, c.status, res.status, res.body)
				e := decode[problemsErr](t, res)
				assert.Equal(t, c.field, e.Error.Field, e.Error.Message)
				assert.Equal(t, before, f.instanceCount(), "nothing started")
			})
		}
		// The page's form gets an error page naming the field.
		res := f.postForm(fmt.Sprintf("/definitions/%d/start", typed.ID), url.Values{"variables.count": {"seven"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, res.status)
		assert.Contains(t, res.body, "variables.count: &#34;seven&#34; is not a whole number")
		assert.Equal(t, before, f.instanceCount(), "nothing started")
	})
}

// vars is a start body setting one variable.
func vars(name string, v any) map[string]any {
	return map[string]any{"variables": map[string]any{name: v}}
}

func TestDefinitionsRefusedToViewersAndReadOnly(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		var asked []string
		f := newFixture(t, db, console.Options{Authorize: func(r *http.Request, action, target string) error {
			if r.Header.Get("X-Role") == "viewer" {
				if action != console.ActionRead {
					return errors.New("viewers may only look")
				}
				return nil
			}
			asked = append(asked, action+" "+target)
			return nil
		}})
		start := fmt.Sprintf("/definitions/%d/start", f.def.ID)
		viewer := map[string]string{"X-Role": "viewer"}
		deps, insts := f.deployments(), f.instanceCount()

		page := f.do(http.MethodGet, "/definitions", nil, viewer)
		require.Equal(t, http.StatusOK, page.status)
		assert.NotContains(t, page.body, `enctype="multipart/form-data"`, "no upload for a viewer")
		page = f.do(http.MethodGet, fmt.Sprintf("/definitions/%d", f.def.ID), nil, viewer)
		require.Equal(t, http.StatusOK, page.status)
		assert.NotContains(t, page.body, `/start"`, "no start form for a viewer")

		res := f.postFiles("/api/definitions", []upload{{"review.xpdl", reviewSource(t)}}, nil, viewer)
		require.Equal(t, http.StatusForbidden, res.status, res.body)
		assert.Equal(t, "forbidden", decode[apiErr](t, res).Error.Code)
		res = f.postForm(start, url.Values{}, viewer)
		require.Equal(t, http.StatusForbidden, res.status, res.body)

		// A cross-origin browser POST is refused before anything runs.
		cross := map[string]string{"Sec-Fetch-Site": "cross-site"}
		res = f.postFiles("/definitions", []upload{{"review.xpdl", reviewSource(t)}}, nil, cross)
		assert.Equal(t, http.StatusForbidden, res.status, res.body)
		res = f.postForm(start, url.Values{}, map[string]string{"Origin": "https://evil.example"})
		assert.Equal(t, http.StatusForbidden, res.status, res.body)
		assert.Equal(t, deps, f.deployments(), "nothing deployed")
		assert.Equal(t, insts, f.instanceCount(), "nothing started")
		assert.Empty(t, asked, "refused before Authorize was asked")

		// What Authorize is asked.
		require.Equal(t, http.StatusSeeOther, f.postForm(start, url.Values{}, nil).status)
		require.Equal(t, http.StatusOK, f.postFiles("/api/definitions", []upload{{"review.xpdl", reviewSource(t)}}, nil, nil).status)
		require.Equal(t, http.StatusOK, f.get(fmt.Sprintf("/api/definitions/%d/explain", f.def.ID)).status)
		assert.Equal(t, []string{
			fmt.Sprintf("instance.start definition/%d", f.def.ID),
			"definition.deploy page/definitions",
			fmt.Sprintf("read definition/%d", f.def.ID),
		}, asked)

		ro := newFixture(t, db, console.Options{ReadOnly: true})
		deps, insts = ro.deployments(), ro.instanceCount()
		res = ro.postFiles("/api/definitions", []upload{{"review.xpdl", reviewSource(t)}}, nil, nil)
		require.Equal(t, http.StatusForbidden, res.status)
		assert.Equal(t, "read_only", decode[apiErr](t, res).Error.Code)
		res = ro.postJSON(fmt.Sprintf("/api/definitions/%d/start", ro.def.ID), map[string]any{})
		require.Equal(t, http.StatusForbidden, res.status)
		assert.Equal(t, "read_only", decode[apiErr](t, res).Error.Code)
		assert.Equal(t, deps, ro.deployments())
		assert.Equal(t, insts, ro.instanceCount())
		for _, p := range []string{"/definitions", fmt.Sprintf("/definitions/%d", ro.def.ID)} {
			page := ro.get(p)
			require.Equal(t, http.StatusOK, page.status)
			assert.NotContains(t, page.body, `method="post"`, "a read-only console offers no actions")
		}
	})
}
