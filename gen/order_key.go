package gen

// The order-by=P key (docs/semantics.md, "Ordered keys"): calls with the
// same value of parameter P (as fmt.Sprint gives it) run one at a time, in
// submit order, across instances. The wrappers of such a task set
// runtime.GeneratedCall.OrderKey; other tasks' code is unchanged.

// orderBy resolves order-by=P to a stored parameter, and refuses it on a
// task under flow control (whose gated claim does not keep the order).
func (c *checker) orderBy(t *task) {
	s := t.spec
	if s.orderBy == "" {
		return
	}
	if s.flow.declaredAny {
		c.at(s.pos["order-by"], "order-by: a task under flow control (limit=, rate=, breaker=) cannot be ordered: its gated claim does not keep the order; drop one of them")
		return
	}
	t.orderBy = c.keyParam(t, "order-by", s.orderBy)
}
