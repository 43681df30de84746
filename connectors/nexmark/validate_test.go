package nexmark

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// ValidateSource refuses what NewSource refuses, in its words.
func TestValidateSource(t *testing.T) {
	for _, c := range []struct {
		opts   map[string]string
		fields []arrow.Field
		want   string
	}{
		{map[string]string{"events_per_second": "0"}, nil, "nexmark source 'bid': option 'events_per_second' must be positive"},
		{map[string]string{"events": "-1"}, nil, "nexmark source 'bid': option 'events' must not be negative"},
		{nil, []arrow.Field{{Name: "seller", Type: arrow.PrimitiveTypes.Int64}}, "nexmark source 'bid': table bid has no column seller (its columns: auction, bidder, price, channel, url, dateTime, extra)"},
		{nil, []arrow.Field{{Name: "price", Type: arrow.PrimitiveTypes.Int32}}, "nexmark source 'bid': column price of table bid must be BIGINT, not int32"},
		{map[string]string{"events": "100", "pace": "true"}, nil, ""},
	} {
		tab := table(t, KindBid, c.opts, 1, 0)
		if c.fields != nil {
			tab.Schema = arrow.NewSchema(c.fields, nil)
		}
		verr := Connector{}.ValidateSource(tab)
		_, nerr := Connector{}.NewSource(tab)
		if c.want == "" {
			if verr != nil || nerr != nil {
				t.Errorf("%v: ValidateSource %v, NewSource %v", c.opts, verr, nerr)
			}
			continue
		}
		if verr == nil || verr.Error() != c.want || nerr == nil || nerr.Error() != c.want {
			t.Errorf("%v: ValidateSource %v, NewSource %v, want %s", c.opts, verr, nerr, c.want)
		}
	}
}
