"""Math core: joint functions f(q) with gradients and Hessians, configurations, kinematics, dynamics
(M, N, G), closed chains and their compiled kernels.  Imports no file formats, no OpenSim, no plotting."""
