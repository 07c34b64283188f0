package query_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// TestHeatProtoRoundTrip: the Heat RPC carries answer.Heat whole: read back
// from its proto, it gives the same JSON element as the store's answer,
// and encoding that again gives the same message.
func TestHeatProtoRoundTrip(t *testing.T) {
	want := storetest.WantHeat()
	if len(want.RDDs) == 0 {
		t.Fatal("the fixture has no heat")
	}
	p := query.HeatToProto(want)
	back := query.HeatFromProto(p)
	var a, b bytes.Buffer
	if err := jsonform.NewEncoder(&a).Encode(jsonform.NewHeat("app", want)); err != nil {
		t.Fatal(err)
	}
	if err := jsonform.NewEncoder(&b).Encode(jsonform.NewHeat("app", back)); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("through the proto:\n%s\nwant\n%s", b.String(), a.String())
	}
	if !proto.Equal(query.HeatToProto(back), p) {
		t.Error("encoding the decoded heat again differs")
	}
}
