package substrait

import "testing"

func TestRedactConnectionStrings(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://clink:s3cret@127.0.0.1:5432/db?sslmode=disable": "postgres://clink:******@127.0.0.1:5432/db?sslmode=disable",
		"host=h user=u password=p dbname=d":                         "host=h user=u password=****** dbname=d",
		"postgres://127.0.0.1/db":                                   "postgres://127.0.0.1/db",
		"s3://bucket/prefix":                                        "s3://bucket/prefix",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if !secretOption("azure.key") || secretOption("s3.access_key") || secretOption("key_column") {
		t.Error("secretOption")
	}
}
