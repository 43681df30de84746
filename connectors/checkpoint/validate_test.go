package checkpoint

import (
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
)

// ValidateSource refuses a bad 'id' as NewSource does, and leaves what
// needs the checkpoint (that it exists, its operators) to NewSource.
func TestValidateSource(t *testing.T) {
	fields := []arrow.Field{{Name: "slot", Type: arrow.BinaryTypes.String, Nullable: true}}
	missing := filepath.Join(t.TempDir(), "none")
	tbl := func(opts map[string]string) *connectors.Table {
		return &connectors.Table{Name: "state", Schema: arrow.NewSchema(fields, nil), Options: validate(t, opts), EventTimeCol: -1}
	}
	bad := tbl(map[string]string{"connector": "checkpoint", "path": missing, "id": "0"})
	want := "checkpoint source 'state': option 'id': 0 is not a checkpoint id (1, 2, ...)"
	verr := Connector{}.ValidateSource(bad)
	_, nerr := Connector{}.NewSource(bad)
	if verr == nil || verr.Error() != want || nerr == nil || nerr.Error() != want {
		t.Errorf("id 0: ValidateSource %v, NewSource %v, want %s", verr, nerr, want)
	}
	good := tbl(map[string]string{"connector": "checkpoint", "path": missing, "id": "3", "operator": "window_agg"})
	if err := (Connector{}).ValidateSource(good); err != nil {
		t.Errorf("a checkpoint not here: %v", err)
	}
	if _, err := (Connector{}).NewSource(good); err == nil {
		t.Errorf("NewSource of a missing checkpoint succeeded")
	}
}
