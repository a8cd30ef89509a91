/* layer module: public declarations (fragment of gaia.h's public section). */
struct gaia_layer_ops; /* the layer module's backend primitives, defined below when the module has any */
