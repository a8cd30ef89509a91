/* hrr module: public declarations (fragment of gaia.h's public section). */
struct gaia_hrr_ops; /* the hrr module's backend primitives, defined below when the module has any */
