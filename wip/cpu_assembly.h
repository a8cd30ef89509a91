/* assembly module: CPU primitives (fragment of gaia_cpu.h's implementation section).
   Define GAIA__CPU_ASSEMBLY_OPS as the address of this backend's ops table. */
