module github.com/wapace/wapace

go 1.25.0

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require golang.org/x/time v0.15.0
