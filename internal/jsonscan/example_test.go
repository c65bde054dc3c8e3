package jsonscan_test

import (
	"fmt"

	"github.com/wapace/wapace/internal/jsonscan"
)

// Object splits an object into its raw members, as json.Unmarshal into a
// map[string]json.RawMessage would.
func ExampleObject() {
	m, err := jsonscan.Object([]byte(`{"to": "15550000001", "type": "text", "text": {"body": "hi"}}`), false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(m["type"]), string(m["text"]))
	_, err = jsonscan.Object([]byte(`[1, 2]`), false)
	fmt.Println(err != nil)
	// Output:
	// "text" {"body": "hi"}
	// true
}
