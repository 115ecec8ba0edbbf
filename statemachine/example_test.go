package statemachine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/statemachine"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/xpdl"
)

// approvalOrg: alice writes, bob reviews.
const approvalOrg = `
users:
  - id: alice
  - id: bob
    roles: [reviewers]
roles:
  - id: reviewers
`

// newApprovalEngine is an engine on a private in-memory SQLite database
// whose directory knows alice and bob, with the approval machine of
// approval; stop stops it and closes the database.
func newApprovalEngine(ctx context.Context) (e *engine.Engine, m *statemachine.Machine, db *gorm.DB, stop func()) {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := resource.ParseOrg([]byte(approvalOrg), resource.FormatYAML)
	if err != nil {
		log.Fatal(err)
	}
	e, err = engine.New(engine.Config{DB: db, Directory: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	m = approval(e)
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	return e, m, db, func() {
		_ = e.Stop(ctx)
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
}

// approval declares the approval flow of the examples and of
// docs/statemachine.md, and binds it to e.
func approval(e *engine.Engine) *statemachine.Machine {
	// begin docblock docs/statemachine.md
	str := xpdl.Basic(xpdl.BasicString)
	def := statemachine.Definition{
		ID: "approval", Name: "Approval", Initial: "draft",
		Vars: []statemachine.Var{
			{Name: "title", Type: str},
			{Name: "author", Type: str},
			{Name: "rounds", Type: xpdl.Basic(xpdl.BasicInteger)},
		},
		Roles: []string{"reviewers"},
		States: []statemachine.State{
			{
				Name: "draft",
				Enter: func(_ context.Context, sc *statemachine.StateContext) error {
					if sc.From == "" { // the start: its input names the document and its author
						sc.Set("title", sc.Input["title"])
						sc.Set("author", sc.Input["author"])
					}
					author, _ := sc.Var("author").(string)
					sc.Assign(author) // the author writes the draft, again after a rollback
					return nil
				},
				Resume: func(context.Context, *statemachine.StateContext, statemachine.Bookmark, map[string]any) (string, error) {
					return "review", nil
				},
			},
			{
				Name:       "review",
				Performers: []string{"reviewers"},
				Enter: func(_ context.Context, sc *statemachine.StateContext) error {
					sc.Set("rounds", sc.Var("rounds").(int64)+1)
					return nil
				},
				Resume: func(_ context.Context, _ *statemachine.StateContext, _ statemachine.Bookmark, input map[string]any) (string, error) {
					switch input["verdict"] {
					case "approve":
						return "approved", nil
					case "reject":
						return "rejected", nil
					case "revise":
						return "draft", nil // back to the author: a rollback
					}
					return "", fmt.Errorf("verdict %v: want approve, reject or revise", input["verdict"])
				},
			},
			{Name: "approved", Final: true},
			{Name: "rejected", Final: true},
		},
	}
	m, err := statemachine.New(e, def) // before e.Start
	if err != nil {
		log.Fatal(err)
	}
	// end docblock
	return m
}

// Example runs an approval: alice drafts, bob asks for a revision (the
// machine rolls back to the draft), alice revises, bob approves. The
// history shows every visit, the rollback's too.
func Example() {
	ctx := context.Background()
	e, m, _, stop := newApprovalEngine(ctx)
	defer stop()
	// begin docblock docs/statemachine.md
	if _, err := m.Deploy(ctx); err != nil {
		log.Fatal(err)
	}
	step, err := m.Start(ctx, map[string]any{"title": "Q3 budget", "author": "alice"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("started in", step.State)

	as := func(user string, input map[string]any) {
		next, err := m.ResumeWith(ctx, step.Bookmark, statemachine.ResumeOpts{User: user, Input: input})
		if err != nil {
			fmt.Println(user, "is refused:", errors.Is(err, engine.ErrNotAllowed))
			return
		}
		step = next
		fmt.Println(user, "moves it to", step.State, "done:", step.Done)
	}
	as("alice", nil)
	as("alice", map[string]any{"verdict": "approve"}) // review is for the reviewers
	as("bob", map[string]any{"verdict": "revise"})
	as("alice", nil)
	as("bob", map[string]any{"verdict": "approve"})

	visits, err := m.History(ctx, step.Instance)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range visits {
		if v.Next == "" {
			fmt.Println(v.State) // a final state
			continue
		}
		fmt.Println(v.State, "->", v.Next, "by", v.By, v.Input)
	}
	// end docblock
	vars, _ := e.Variables(ctx, step.Instance)
	fmt.Println("rounds of review:", vars["rounds"])
	// Output:
	// started in draft
	// alice moves it to review done: false
	// alice is refused: true
	// bob moves it to draft done: false
	// alice moves it to review done: false
	// bob moves it to approved done: true
	// draft -> review by alice map[]
	// review -> draft by bob map[verdict:revise]
	// draft -> review by alice map[]
	// review -> approved by bob map[verdict:approve]
	// approved
	// rounds of review: 2
}

// ExampleMachine_Resume shows what becomes of a bookmark: it is durable
// text, valid once, refused afterwards, and a Resume to no state changes
// nothing.
func ExampleMachine_Resume() {
	ctx := context.Background()
	_, m, _, stop := newApprovalEngine(ctx)
	defer stop()
	if _, err := m.Deploy(ctx); err != nil {
		log.Fatal(err)
	}
	first, err := m.Start(ctx, map[string]any{"title": "Q4 plan", "author": "alice"})
	if err != nil {
		log.Fatal(err)
	}
	// begin docblock docs/statemachine.md
	text := first.Bookmark.String() // kept anywhere: a row, a link
	b, err := statemachine.ParseBookmark(text)
	if err != nil {
		log.Fatal(err)
	}
	review, err := m.ResumeWith(ctx, b, statemachine.ResumeOpts{User: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.ResumeWith(ctx, b, statemachine.ResumeOpts{User: "alice"})
	fmt.Println("again:", errors.Is(err, statemachine.ErrBookmarkResumed))

	_, err = m.ResumeWith(ctx, review.Bookmark, statemachine.ResumeOpts{User: "bob", Input: map[string]any{"verdict": "maybe"}})
	now, _ := m.Current(ctx, review.Instance)
	fmt.Println("no such verdict:", err != nil, "still in", now.State, now.Bookmark == review.Bookmark)

	if err := m.Abort(ctx, review.Instance, "plan dropped"); err != nil {
		log.Fatal(err)
	}
	_, err = m.ResumeWith(ctx, review.Bookmark, statemachine.ResumeOpts{User: "bob", Input: map[string]any{"verdict": "approve"}})
	fmt.Println("after Abort:", errors.Is(err, statemachine.ErrStaleBookmark))
	// end docblock
	// Output:
	// again: true
	// no such verdict: true still in review true
	// after Abort: true
}

// ExampleMachine_ResumeTx resumes in the host's transaction: the host's
// row and the move commit together.
func ExampleMachine_ResumeTx() {
	ctx := context.Background()
	e, m, db, stop := newApprovalEngine(ctx)
	defer stop()
	if _, err := m.Deploy(ctx); err != nil {
		log.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE submissions (title VARCHAR(100))").Error; err != nil {
		log.Fatal(err)
	}
	step, err := m.Start(ctx, map[string]any{"title": "Q1 hires", "author": "alice"})
	if err != nil {
		log.Fatal(err)
	}
	// begin docblock docs/statemachine.md
	err = e.Transaction(ctx, db, func(tx *gorm.DB) error {
		next, err := m.ResumeTx(ctx, tx, step.Bookmark, statemachine.ResumeOpts{User: "alice"})
		if err != nil {
			return err // nothing of the move is kept
		}
		step = next
		return tx.Exec("INSERT INTO submissions (title) VALUES (?)", "Q1 hires").Error
	})
	// end docblock
	if err != nil {
		log.Fatal(err)
	}
	var n int64
	db.Table("submissions").Count(&n)
	fmt.Println(step.State, n)
	// Output:
	// review 1
}
