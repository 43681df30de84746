package objectstore

import (
	"testing"

	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// The scenarios against real servers on 127.0.0.1 (skipped when a server
// is not installed, unless CLINK_REQUIRE_OBJECTSTORES=1). Each scenario
// gets its own server: a bucket named "lake" is created in each.

func TestS3(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.MinIO(t)) })
}

func TestGCS(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.FakeGCS(t)) })
}

func TestAzure(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.Azurite(t)) })
}
