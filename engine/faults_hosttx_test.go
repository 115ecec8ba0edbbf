package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// faultDialect opens a fresh database of one kind with the options given.
type faultDialect struct {
	name, dialect string
	open          func(testing.TB, gormstore.OpenOpts) *gorm.DB
}

// faultDialects open a fresh database of each kind with a fault injector
// in its connections: a SQLite file (a broken connection to an in-memory
// database would lose the database) and MySQL/MariaDB when
// GOXPDL_MYSQL_DSN is set.
var faultDialects = []faultDialect{
	{"SQLite", store.DialectSQLite, dbtest.OpenSQLiteOpts},
	{"MySQL", store.DialectMySQL, dbtest.OpenMySQLOpts},
}

// statementErrors are the errors a statement fault returns on dialect:
// the database's lock conflicts and a lost connection.
func statementErrors(dialect string) map[string]error {
	if dialect == store.DialectMySQL {
		return map[string]error{
			"deadlock":          faultdb.MySQLDeadlock(),
			"lock-wait-timeout": faultdb.MySQLLockWaitTimeout(),
			"connection-lost":   faultdb.ConnectionLost(dialect),
		}
	}
	return map[string]error{
		"busy":            faultdb.SQLiteBusy(),
		"connection-lost": faultdb.ConnectionLost(dialect),
	}
}

// hostTxProcess is one work item and an end.
var hostTxProcess = xpdltest.Package(`<WorkflowProcess Id="approve">
  <Activities>
    <Activity Id="Check"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>
    <Activity Id="Done"><Route/></Activity>
  </Activities>
  <Transitions><Transition Id="t1" From="Check" To="Done"/></Transitions>
</WorkflowProcess>`)

// TestHostTxFaults injects a fault at every statement, the BEGIN and the
// COMMIT of a host transaction that writes a row of its own and
// completes a work item (CompleteWorkItemTx), one fault per instance, on
// both databases: afterwards the host's row and the engine's completion
// are both there or neither is; an error that is not the ambiguous commit
// means nothing committed; the host's retry (with the completion's
// IdempotencyKey and a host write that looks first) then succeeds, and a
// retry without the key after a commit that went through is refused with
// a typed error (ErrIllegalState), not applied twice; the instance then
// completes, its item completed once.
func TestHostTxFaults(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			in := faultdb.New()
			db := d.open(t, in.OpenOpts())
			require.NoError(t, db.Exec("CREATE TABLE host_rows (item BIGINT NOT NULL PRIMARY KEY)").Error)
			e, err := engine.New(engine.Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 20 * time.Millisecond})
			require.NoError(t, err)
			// The engine's own work runs unfaulted (its context is
			// exempt): the faults strike the host's transaction alone.
			quiet := faultdb.Exempt(t.Context())
			require.NoError(t, e.Start(quiet))
			t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
			_, err = e.Deploy(quiet, []byte(hostTxProcess))
			require.NoError(t, err)

			openItem := func() int64 {
				id, err := e.StartProcess(quiet, engine.StartOptions{Package: "pkg"})
				require.NoError(t, err)
				require.NoError(t, e.WaitQuiet(quiet))
				items, err := workItemsOf(quiet, e, openItemsOf(id))
				require.NoError(t, err)
				require.Len(t, items, 1)
				return items[0].ID
			}
			// hostTx is the host's transaction: its own row, written
			// once whatever the retries, and the completion.
			hostTx := func(ctx context.Context, item int64, key string) error {
				return e.Transaction(ctx, db, func(tx *gorm.DB) error {
					var n int64
					if err := tx.Raw("SELECT COUNT(*) FROM host_rows WHERE item = ?", item).Scan(&n).Error; err != nil {
						return err
					}
					if n == 0 {
						if err := tx.Exec("INSERT INTO host_rows (item) VALUES (?)", item).Error; err != nil {
							return err
						}
					}
					_, err := e.CompleteWorkItemTx(ctx, tx, item, engine.Completion{User: "clerk1", IdempotencyKey: key})
					return err
				})
			}
			// outcome says whether the host's row and the completion are
			// there.
			outcome := func(item int64) (hostRow, completed bool) {
				var n int64
				require.NoError(t, db.WithContext(quiet).Raw("SELECT COUNT(*) FROM host_rows WHERE item = ?", item).Scan(&n).Error)
				wi, err := e.WorkItem(quiet, item)
				require.NoError(t, err)
				return n == 1, wi.State == workitem.Completed
			}

			// A run without faults counts the transaction's statements.
			item := openItem()
			before := in.Stats()
			require.NoError(t, hostTx(t.Context(), item, "measure"))
			stmts := in.Stats().Statements - before.Statements
			require.Positive(t, stmts)

			type fault struct {
				name string
				f    faultdb.Fault
			}
			var faults []fault
			for name, err := range statementErrors(d.dialect) {
				for n := int64(1); n <= stmts; n++ {
					faults = append(faults, fault{fmt.Sprintf("statement %d %s", n, name), faultdb.Fault{Kind: faultdb.Statement, At: n, Err: err}})
				}
				faults = append(faults, fault{"begin " + name, faultdb.Fault{Kind: faultdb.Begin, At: 1, Err: err}},
					fault{"commit " + name, faultdb.Fault{Kind: faultdb.Commit, At: 1, Err: err}})
			}
			faults = append(faults, fault{"after-commit", faultdb.Fault{Kind: faultdb.AfterCommit, At: 1, Err: faultdb.ConnectionLost(d.dialect)}})

			injected := 0
			for _, f := range faults {
				item := openItem()
				key := fmt.Sprintf("complete-%d", item)
				hits := in.Stats().Total()
				in.Arm(f.f)
				err := hostTx(t.Context(), item, key)
				in.Clear()
				if in.Stats().Total() > hits {
					injected++
				}
				host, done := outcome(item)
				require.Equal(t, host, done, "%s: the host's row and the completion must commit together (err %v)", f.name, err)
				if err == nil {
					require.True(t, done, "%s: no error, yet nothing committed", f.name)
				} else if done {
					require.Equal(t, faultdb.AfterCommit, f.f.Kind, "%s: an error came back although the transaction committed: %v", f.name, err)
				}
				if done && err != nil {
					// The ambiguous commit: without the key the retry is
					// refused, and changes nothing.
					err := hostTx(t.Context(), item, "")
					require.ErrorIs(t, err, engine.ErrIllegalState, "%s", f.name)
				}
				// The host retries until it succeeds (once is enough).
				require.NoError(t, hostTx(t.Context(), item, key), "%s: the retry", f.name)
				host, done = outcome(item)
				require.True(t, host && done, f.name)
				wi, err := e.WorkItem(quiet, item)
				require.NoError(t, err)
				require.NoError(t, e.WaitQuiet(quiet))
				pi, err := e.Instance(quiet, wi.Instance)
				require.NoError(t, err)
				require.Equal(t, wftype.ProcessCompleted, pi.State, f.name)
				completions := 0
				page, err := e.History(quiet, engine.HistoryFilter{Instance: wi.Instance, Limit: 1000})
				require.NoError(t, err)
				for _, h := range page.Entries {
					if h.WorkItem == item && h.To == string(workitem.Completed) {
						completions++
					}
				}
				require.Equal(t, 1, completions, "%s: the work item completed once", f.name)
			}
			require.Equal(t, len(faults), injected, "every fault struck")
			t.Logf("%s: %d statements in the host transaction; %d faults injected", d.name, stmts, injected)
		})
	}
}
