"""The seed documents' own systems: the planar chain, Newton-Euler foot-shank, linkages, Andrews' squeezer."""
