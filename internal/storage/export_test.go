package storage

// FlowWriteArgs exposes flowWriteArgs (the arguments of Statements.FlowWrite)
// to the placeholder test (placeholders_test.go).
func FlowWriteArgs(st *FlowState) []any { return st.flowWriteArgs() }
