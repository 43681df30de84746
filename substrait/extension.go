// Package substrait holds Clink's Substrait extension (the YAML that
// declares windows) and the helpers that build, read and print plans. The
// plan is Clink's only logical IR: the SQL binder produces it and the
// planner consumes nothing else.
package substrait

import (
	"bytes"
	_ "embed"
	"sync"

	"github.com/substrait-io/substrait-go/v8/extensions"
)

// ExtensionYAML is Clink's extension file.
//
//go:embed clink.yaml
var ExtensionYAML []byte

// URNs of the extension files plans reference.
const (
	URNClink             = "extension:dev.clink:streaming"
	URNArithmetic        = "extension:io.substrait:functions_arithmetic"
	URNComparison        = "extension:io.substrait:functions_comparison"
	URNBoolean           = "extension:io.substrait:functions_boolean"
	URNAggregate         = "extension:io.substrait:functions_aggregate_generic"
	URNDatetime          = "extension:io.substrait:functions_datetime"
	URNString            = "extension:io.substrait:functions_string"
	URNArithmeticDecimal = "extension:io.substrait:functions_arithmetic_decimal"
	URNRounding          = "extension:io.substrait:functions_rounding"
)

// ClinkExtensionURI is where the YAML is published, for consumers that
// still resolve extension URIs.
const ClinkExtensionURI = "https://clink.dev/extensions/clink.yaml"

var (
	collOnce sync.Once
	coll     *extensions.Collection
	collErr  error
)

// Collection returns the default Substrait extension collection with
// Clink's extension loaded. substrait-go's default collection is process
// global, so it is loaded once.
func Collection() (*extensions.Collection, error) {
	collOnce.Do(func() {
		coll, collErr = extensions.GetDefaultCollection()
		if collErr != nil {
			return
		}
		if !coll.URNLoaded(URNClink) {
			collErr = coll.Load(ClinkExtensionURI, bytes.NewReader(ExtensionYAML))
		}
	})
	return coll, collErr
}
