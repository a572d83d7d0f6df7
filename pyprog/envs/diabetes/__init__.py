"""NS-Diabetes: a bolus calculator for a type-1-diabetes patient whose body drifts.

The package is split by what each part models, in simglucose's own terms:

* :mod:`~pyprog.envs.diabetes.parameters` -- the UVa/Padova patients, the pump and the sensor;
* :mod:`~pyprog.envs.diabetes.model` -- the patient's ODE: state, parameters, dx/dt (numba);
* :mod:`~pyprog.envs.diabetes.dopri5` -- scipy's DOPRI5 integrator, one minute at a time (numba);
* :mod:`~pyprog.envs.diabetes.patient` -- a patient minute by minute, and whole days (numba);
* :mod:`~pyprog.envs.diabetes.day` -- one day of meals, sensor noise, pump and bolus rule (numba);
* :mod:`~pyprog.envs.diabetes.env` -- the Gymnasium environment :class:`NSDiabetes`.

Nothing is imported here, so that reading a patient's parameters does not load numba.
"""
