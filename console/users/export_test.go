package users

import "golang.org/x/crypto/bcrypt"

// DummyCost is the bcrypt cost of the dummy hash f checks unknown names
// against.
func DummyCost(f *File) int {
	c, err := bcrypt.Cost(f.dummyHash())
	if err != nil {
		panic(err)
	}
	return c
}
