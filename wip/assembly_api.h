/* assembly module: public declarations (fragment of gaia.h's public section). */
struct gaia_assembly_ops; /* the assembly module's backend primitives, defined below when the module has any */
