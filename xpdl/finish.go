package xpdl

// finish completes a freshly read package: it indexes every flow and fills
// in the documented defaults for implicit gateways. It runs once, before
// the package is handed out, and never after.
func finish(pkg *Package) {
	for _, proc := range pkg.Processes {
		for _, f := range proc.Flows() {
			f.index()
			for i, a := range f.Activities {
				fillGateways(f, i, a)
			}
		}
	}
}

// fillGateways applies the gateway defaults (docs/xpdl-support.md):
//
//   - a declared Join or Split element wins;
//   - an XPDL 2 Route's GatewayType (XOR when absent, as the XPDL 2 schema
//     says) types both its join and its split; XPDL 1.0 Routes have no
//     gateway type and take the defaults below;
//   - any other activity with several incoming transitions joins as XOR
//     (every arrival starts it: BPMN's uncontrolled merge), and with several
//     outgoing transitions splits as OR (every transition whose condition
//     holds is taken; unconditional ones always are, so a split with no
//     conditions behaves as AND).
//
// Defaults filled for lack of a declaration are marked Implicit.
func fillGateways(f *Flow, i int, a *Activity) {
	// Incoming(a.ID) and Outgoing(a.ID), without looking the id up.
	first := f.first[i]
	in, out := len(f.in[first]), len(f.out[first])
	if a.Join.Type == GatewayNone && in > 1 {
		a.Join = implicitGateway(a, GatewayXOR)
	}
	if a.Split.Type == GatewayNone && out > 1 {
		a.Split = implicitGateway(a, GatewayOR)
	}
}

func implicitGateway(a *Activity, dflt GatewayType) Gateway {
	if a.Route != nil && a.Route.typed {
		return Gateway{Type: a.Route.GatewayType, Implicit: !a.Route.declared, Pos: a.Pos}
	}
	return Gateway{Type: dflt, Implicit: true, Pos: a.Pos}
}
