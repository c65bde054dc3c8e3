package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestAnalyseDemoLog(t *testing.T) {
	var out bytes.Buffer
	if err := analyse(demoLog(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"victim of a burst of 20", "still owed 19.75s", "22 attempts read, 2 pairs, 1 131056 explained"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "237690000001") {
		t.Error("the report names the full recipient")
	}
}

func TestAnalyseRejectsJunk(t *testing.T) {
	if err := analyse(strings.NewReader("{\"msg\":\"x\"}\nnot json\n"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("analyse(junk) = %v", err)
	}
}

func FuzzAnalyse(f *testing.F) {
	f.Add([]byte(`{"msg":"wapace attempt","at":"2026-11-30T09:00:00Z","pair":"p","to":"2376*****001","state":"queued","code":131056}`))
	f.Add([]byte("{}\n{}"))
	f.Fuzz(func(t *testing.T, log []byte) {
		_ = analyse(bytes.NewReader(log), &bytes.Buffer{})
	})
}
