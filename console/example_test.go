package console_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/gormstore"
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
