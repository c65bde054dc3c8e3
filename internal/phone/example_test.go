package phone_test

import (
	"fmt"

	"github.com/wapace/wapace/internal/phone"
)

// Any spelling of one phone number is one recipient; a BSUID is another.
func ExampleParseTo() {
	a, _ := phone.ParseTo("+237 690 00 00 01")
	b, _ := phone.ParseTo("00237690000001")
	u, _ := phone.ParseTo("CO.1949266959121697")
	fmt.Println(a.Key() == b.Key(), a.String(), a.IsBSUID())
	fmt.Println(u.IsBSUID(), u.Key() == a.Key())
	_, err := phone.ParseTo("0690000001")
	fmt.Println(err != nil)
	// Output:
	// true 237690000001 false
	// true false
	// true
}

func ExampleMask() {
	fmt.Println(phone.Mask("237690000001"))
	fmt.Println(phone.Mask("CO.1949266959121697"))
	// Output:
	// 2376*****001
	// CO.*************697
}
