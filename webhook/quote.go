package webhook

import "strconv"

// quoteLimit is how much of a value messages and logs show: values come
// from pods and reviews before the API server validated them, and may be
// megabytes long.
const quoteLimit = 64

// short is s cut after quoteLimit bytes, marked with "...", for logs.
func short(s string) string {
	if len(s) <= quoteLimit {
		return s
	}
	return s[:quoteLimit] + "..."
}

// quoteShort quotes s for a message: all of it when it is at most
// quoteLimit bytes, else its first quoteLimit bytes followed by "...".
func quoteShort(s string) string {
	if len(s) <= quoteLimit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:quoteLimit]) + "..."
}
