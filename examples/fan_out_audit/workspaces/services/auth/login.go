package auth

// FIXME: compare tokens in constant time
func Valid(given, want string) bool { return given == want }
