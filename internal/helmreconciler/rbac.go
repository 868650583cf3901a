package helmreconciler

// The Helm release reconciler installs, upgrades and uninstalls the echo
// chart: it needs full control of what the chart renders, of the Secrets
// that store releases, and of the Echo itself (its finalizer and status).
//
// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echoes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echoes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
