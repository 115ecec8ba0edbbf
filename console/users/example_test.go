package users_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/goxpdl/goxpdl/console/users"
)

// A users file, the middleware in front of a handler, and the roles at
// work: the handler stands for the console, which asks Authorize before
// each action and records Actor.
func Example() {
	// begin docblock docs/serve.md
	hash, err := users.Hash([]byte("s3cret"), bcrypt.MinCost) // goxpdl users add uses bcrypt.DefaultCost
	if err != nil {
		panic(err)
	}
	f, err := users.Parse(strings.NewReader("# NAME:ROLE:BCRYPT-HASH\nbob:operator:"+string(hash)+"\n"), "users.txt")
	if err != nil {
		panic(err)
	}
	auth, err := users.NewAuth(f, users.Config{})
	if err != nil {
		panic(err)
	}
	h := auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s: suspend: %v; deploy: %v\n", users.Actor(r),
			users.Authorize(r, "instance.suspend", "instance/1"),
			users.Authorize(r, "definition.deploy", "definition/order"))
	}))

	for _, password := range []string{"s3cret", "guess"} {
		r := httptest.NewRequest(http.MethodGet, "/api/instances", nil)
		r.SetBasicAuth("bob", password)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// end docblock
	// Output:
	// 200 bob: suspend: <nil>; deploy: bob (operator) may not definition.deploy definition/order
	// 401 authentication required
}
