package connectors

import (
	"strings"
	"testing"
)

func TestSpecValidate(t *testing.T) {
	s := &Spec{Name: "x", Options: []Option{
		{Name: "connector", Type: String, Required: true},
		{Name: "brokers", Aliases: []string{"properties.bootstrap.servers"}, Type: String, Required: true},
		{Name: "mode", Aliases: []string{"scan.startup.mode"}, ValueAliases: map[string]string{"earliest-offset": "earliest"}, Type: Enum, Values: []string{"earliest", "latest"}, Default: "latest"},
		{Name: "lag", Type: Int, Default: "0"},
	}}
	got, err := s.Validate(map[string]string{"connector": "x", "properties.bootstrap.servers": "h:1", "scan.startup.mode": "earliest-offset"})
	if err != nil {
		t.Fatal(err)
	}
	if got["brokers"] != "h:1" || got["mode"] != "earliest" || got["lag"] != "0" {
		t.Fatalf("got %v", got)
	}
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"connector": "x", "brokers": "h", "lgа": "1"}, "has no option"},
		{map[string]string{"connector": "x", "brokers": "h", "lags": "1"}, "did you mean 'lag'?"},
		{map[string]string{"connector": "x", "brokers": "h", "lag": "soon"}, "option 'lag': 'soon' is not an integer"},
		{map[string]string{"connector": "x", "brokers": "h", "mode": "middle"}, "'middle' is not one of 'earliest', 'latest'"},
		{map[string]string{"connector": "x"}, "needs option 'brokers'"},
		{map[string]string{"connector": "x", "brokers": "h", "properties.bootstrap.servers": "h"}, "say the same thing"},
	} {
		_, err := s.Validate(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.opts, err, c.want)
		}
	}
}
