"""The NVFP4 quantizer's datapath (:class:`hw.nvfp4_quantizer.NVFP4Quantizer`).

* :mod:`hw.nvfp4.sections` -- the geometry (:class:`NVQGeometry`) and the sections with their
  delay estimates.
* :mod:`hw.nvfp4.divide` -- restoring division steps, spread over sections.
* :mod:`hw.nvfp4.scale` -- the block's path: amax, ``f(amax / 6)``, (two level) ``f(b / P)``,
  the UE4M3 cast, ``r = f(R / s)``.
* :mod:`hw.nvfp4.lanes` -- the lanes' path: ``f(x * r)``, then e2m1.
"""
