package objectstore

import (
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/clink-dev/clink/connectors"
)

// location is where a sink publishes: a store's bucket (container) and a
// key prefix, or a local directory (scheme "").
type location struct {
	scheme string // "s3", "gs", "azure" or "" (local)
	bucket string
	prefix string // no leading or trailing slash; a local directory's path
}

func (l location) String() string {
	if l.scheme == "" {
		return l.prefix
	}
	return l.scheme + "://" + l.bucket + "/" + l.prefix
}

// key is the object key (local: the file path) of name under l.
func (l location) key(name string) string {
	if l.scheme == "" {
		return filepath.Join(l.prefix, filepath.FromSlash(name))
	}
	if l.prefix == "" {
		return name
	}
	return l.prefix + "/" + name
}

// dirPrefix is the prefix that lists everything under l.
func (l location) dirPrefix() string {
	if l.scheme == "" {
		return l.prefix + string(filepath.Separator)
	}
	if l.prefix == "" {
		return ""
	}
	return l.prefix + "/"
}

// parseLocation reads a 'path' or 'staging_path' value.
func parseLocation(key, v string) (location, error) {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		if v == "" {
			return location{}, &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s' is empty", key)}
		}
		return location{prefix: filepath.Clean(v)}, nil
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a":
		scheme = "s3"
	case "gs":
		scheme = "gs"
	case "azure":
		scheme = "azure"
	case "file":
		return location{prefix: filepath.Clean(rest)}, nil
	default:
		return location{}, &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': unknown scheme %s:// (s3://, gs://, azure://, or a local directory)", key, scheme)}
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return location{}, &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': %s has no bucket (%s://bucket/prefix)", key, v, scheme)}
	}
	prefix = strings.Trim(path.Clean("/"+prefix), "/")
	return location{scheme: scheme, bucket: bucket, prefix: prefix}, nil
}

// stagingLocation is where pub's files wait for their checkpoint:
// 'staging_path', or the sibling _clink_staging/<last segment of pub>.
func stagingLocation(o connectors.Options, pub location) (location, error) {
	if v := o["staging_path"]; v != "" {
		st, err := parseLocation("staging_path", v)
		if err != nil {
			return st, err
		}
		if st.scheme != pub.scheme || st.bucket != pub.bucket {
			return st, &connectors.OptionError{Key: "staging_path", Msg: fmt.Sprintf("option 'staging_path' (%s) must be in the same store and bucket as 'path' (%s): files are published by a server-side copy or a rename", st, pub)}
		}
		if under(st, pub) || under(pub, st) {
			return st, &connectors.OptionError{Key: "staging_path", Msg: fmt.Sprintf("option 'staging_path' (%s) and 'path' (%s) must not contain each other: readers of the path would see staged files", st, pub)}
		}
		return st, nil
	}
	if pub.scheme == "" {
		abs, err := filepath.Abs(pub.prefix)
		if err != nil {
			return pub, err
		}
		if filepath.Dir(abs) == abs {
			return pub, &connectors.OptionError{Key: "staging_path", Msg: "a Parquet sink into the root directory needs 'staging_path'"}
		}
		return location{prefix: filepath.Join(filepath.Dir(abs), "_clink_staging", filepath.Base(abs))}, nil
	}
	if pub.prefix == "" {
		return pub, &connectors.OptionError{Key: "staging_path", Msg: fmt.Sprintf("path %s is a bucket's root: give 'staging_path' (another bucket's root cannot be used: staging must be in the same bucket, not under the path), or write under a prefix", pub)}
	}
	st := pub
	if i := strings.LastIndexByte(pub.prefix, '/'); i >= 0 {
		st.prefix = pub.prefix[:i] + "/_clink_staging/" + pub.prefix[i+1:]
	} else {
		st.prefix = "_clink_staging/" + pub.prefix
	}
	return st, nil
}

// under reports whether a is b or inside it.
func under(a, b location) bool {
	if a.scheme == "" {
		aa, _ := filepath.Abs(a.prefix)
		bb, _ := filepath.Abs(b.prefix)
		rel, err := filepath.Rel(bb, aa)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	return b.prefix == "" || a.prefix == b.prefix || strings.HasPrefix(a.prefix, b.prefix+"/")
}

// parseSize reads a byte size: a number, or one with a unit (KB, MB, GB,
// KiB, ...; Flink's '128MB'); units are powers of 1024 as in Flink.
func parseSize(key, v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	mult := int64(0)
	switch unit {
	case "", "b", "bytes":
		mult = 1
	case "k", "kb", "kib", "kibibytes", "kilobytes":
		mult = 1 << 10
	case "m", "mb", "mib", "mebibytes", "megabytes":
		mult = 1 << 20
	case "g", "gb", "gib", "gibibytes", "gigabytes":
		mult = 1 << 30
	}
	if err != nil || mult == 0 || n <= 0 || n > (1<<62)/mult {
		return 0, &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': '%s' is not a positive size (bytes, or with KB, MB, GB)", key, v)}
	}
	return n * mult, nil
}

// parseInterval reads a duration: milliseconds, or a number with a unit
// (Flink's '15 min', '30 s'; Go's '1h30m').
func parseInterval(key, v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	bad := &connectors.OptionError{Key: key, Msg: fmt.Sprintf("option '%s': '%s' is not a positive duration (milliseconds, or with a unit: ms, s, min, h)", key, v)}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return 0, bad
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
	if i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
			"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
			"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
			"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
		}[strings.ToLower(strings.TrimSpace(s[i:]))]
		if err == nil && unit != 0 && n > 0 {
			return time.Duration(n) * unit, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, bad
}
