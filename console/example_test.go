package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// A host mounts the console under a prefix of its own server, behind its
// own authentication, and tells the console who is acting.
func ExampleNew() {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sqlDB.Close() }()
	eng, err := engine.New(engine.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := eng.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = eng.Stop(ctx) }()

	// begin docblock docs/console.md
	h, err := console.New(eng, console.Options{
		Prefix: "/workflow",
		// The host's middleware has authenticated the user.
		Actor: func(r *http.Request) string { return r.Header.Get("X-Authenticated-User") },
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/workflow/", h)
	// end docblock
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/workflow/api/instances")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, strings.TrimSpace(string(body)))
	// Output:
	// 200 OK {
	//   "instances": []
	// }
}

// A host that lets operators upload definitions sets the engine's
// definition limits and the console's upload size (here both lower than
// their defaults); an upload over a limit is refused with the limit named
// at its line and column, and nothing is deployed.
func ExampleOptions_uploads() {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sqlDB.Close() }()
	// begin docblock docs/security.md
	eng, err := engine.New(engine.Config{
		DB:                 db,
		MaxDefinitionBytes: 8 << 20,                                // what Deploy reads (default 16 MiB)
		DefinitionLimits:   xpdl.Limits{Activities: 2, Nesting: 4}, // zero fields: the defaults
	})
	if err != nil {
		log.Fatal(err)
	}
	h, err := console.New(eng, console.Options{
		MaxUploadBytes: 1 << 20, // one upload, all its files (default console.DefaultMaxUploadBytes, 4 MiB)
	})
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	part, _ := form.CreateFormFile("file", "three.xpdl")
	_, _ = part.Write([]byte(xpdltest.Sized("Activities", 3)))
	_ = form.WriteField("reason", "example")
	_ = form.Close()
	res, err := http.Post(srv.URL+"/api/definitions", form.FormDataContentType(), &body)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var answer struct {
		Error struct {
			Code     string
			Problems xpdl.Problems
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, answer.Error.Code)
	fmt.Println(answer.Error.Problems[0])
	// Output:
	// 422 Unprocessable Entity invalid
	// three.xpdl:11:22: process "p" has 3 activities (its activity sets' included), more than the limit of 2 (Limits.Activities)
}
