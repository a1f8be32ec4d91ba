"""An EKS cluster for GPU inference (pulumi-aws): VPC, IAM, cluster, node groups, EFS.

What it builds, and why each setting:
- Its own AWS provider for the manifest's region (so clusters in several regions coexist), with
  the settings of the cluster's credentials set, or the standard AWS credential chain.
- A VPC with one public and one private subnet per availability zone (tagged for load balancers),
  an internet gateway and one NAT gateway; nodes run in the private subnets. EKS needs two zones:
  when the pools name fewer (a Capacity Block lives in one), the region's first available zones,
  sorted, complete them.
- IAM roles: the cluster role (AmazonEKSClusterPolicy), the node role (worker, CNI and ECR read-only
  policies), and an EFS CSI driver role assumed through EKS Pod Identity.
- The cluster, with access entries (`authentication_mode: API`) and admin access for the identity
  that creates it, so `aws eks get-token` works for whoever runs `pulumi up`; the manifest's
  `accessEntries` (a CI role that previews) get their own entry and policy, cluster-wide.
- A system node group (standard AL2023) and one managed node group per GPU pool from its class's
  `provisioning.eks`: `AL2023_x86_64_NVIDIA` AMI (NVIDIA driver included), instance type, disk,
  scaling between the pool's floor and ceiling, the pool's subnets by zone, node labels, and the
  `nvidia.com/gpu=true:NoSchedule` taint so only GPU workloads land there. The desired size is the
  nodes the placement holds on the pool (`pool_nodes`), kept between the floor and the ceiling, so
  every node `plan` counts on exists once `pulumi up` has run, and nodes nothing holds are released.
  No cluster autoscaler is installed, on purpose: its scale-up simulates the pending pods, and the
  engines' pods claim GPUs through DRA ResourceClaims, which it cannot simulate on a node group with
  no node yet (its DRA support is alpha and needs the node's ResourceSlices); the ledger already
  knows how many nodes each pool needs.
- A pool with a Capacity Block (`capacityBlock.capacityReservationId`) runs in that reservation as
  AWS documents for managed node groups: a launch template with the `capacity-block` market type,
  the reservation as its target, the instance type and the root volume, and a node group of
  capacity type `CAPACITY_BLOCK` (instance type and disk come from the template). EC2 reclaims the
  instances when the block ends; the node group stays and launches nothing until it is given a new
  reservation.
- EFS with a mount target per private subnet, the `aws-efs-csi-driver` add-on, and a
  ReadWriteMany StorageClass (`efs.csi.aws.com`, access-point provisioning).
- A kubeconfig that authenticates through `aws eks get-token`.

An EFA pool (`fabric.type: EFA`) gets no EFA network interfaces here: that needs a launch template
and a placement group, which this component does not create.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
from pulumi import ResourceOptions

from modelplane.api import Fleet
from modelplane.api import InferenceCluster as ClusterManifest
from modelplane.api.fleet import DeletionPolicy
from modelplane.invariants import present
from modelplane.pulumi.clusters.contract import (
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    RWX_STORAGE_CLASS,
    ClusterComponent,
    ClusterInputs,
    MachinePoolArgs,
    ProviderSettings,
    explicit_provider,
    kubernetes_provider,
    machine_pool,
    pool_labels,
    provisioned_pools,
    rwx_storage_class,
)
from modelplane.pulumi.clusters.kubeconfig import eks_kubeconfig
from modelplane.pulumi.names import aliased, legacy_pool_name, pool_name

GPU_AMI = "AL2023_x86_64_NVIDIA"
GPU_TAINT: aws.eks.NodeGroupTaintArgsDict = {"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": "NO_SCHEDULE"}
ROOT_DEVICE = "/dev/xvda"
"""The root volume of the AL2023 EKS AMIs, which a launch template sizes."""
MANAGED = "arn:aws:iam::aws:policy/"
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")


class EksPoolArgs(MachinePoolArgs):
    capacity_reservation_id: NotRequired[str | None]
    """The EC2 Capacity Block for ML the node group runs in (its one zone is the pool's). Default: None."""


class EksClusterArgs(TypedDict):
    deletion_protection: NotRequired[bool]
    """EKS's own deletion protection on the cluster (`spec.deletionPolicy: Orphan`). Default: False (not set)."""
    name: str
    """The EKS cluster name (the InferenceCluster's name)."""
    region: str
    """The AWS region, e.g. us-west-2."""
    kubernetes_version: str
    """The Kubernetes version, e.g. "1.34" (DRA's resource.k8s.io/v1 needs 1.34)."""
    pools: Sequence[EksPoolArgs]
    """The GPU node groups."""
    pool_nodes: NotRequired[pulumi.Input[Mapping[str, int]]]
    """Pool -> the nodes the placement holds on it: each node group's desired size, within its
    floor and ceiling. Default: none held, so each group runs its floor."""
    provider_settings: NotRequired[ProviderSettings | None]
    """More arguments of the cluster's `aws.Provider` (a named credentials set: `profile`,
    `assume_role`, ...). Default: None, the standard AWS credential chain."""
    zones: NotRequired[Sequence[str]]
    """Availability zones of the VPC's subnets; EKS needs at least two. Default: every zone the
    pools name, sorted, completed to two with the region's first available zones."""
    vpc_cidr: NotRequired[str]
    """The VPC's range, split into /20 subnets (public first, then private). Default: 10.20.0.0/16."""
    storage_class_name: NotRequired[str]
    """Name of the ReadWriteMany StorageClass created for ModelCache volumes. Default: modelplane-rwx."""
    system_instance_type: NotRequired[str]
    """Instance type of the system node group (2 nodes, 1-3). Default: m6i.large."""
    access_entries: NotRequired[Sequence[tuple[str, str]]]
    """(IAM principal ARN, EKS access policy name) pairs that get an access entry with that policy,
    cluster-wide (a CI role that previews the stack). Default: none."""


def eks_args(cluster: ClusterManifest, fleet: Fleet) -> EksClusterArgs:
    """EksClusterArgs from a validated EKS InferenceCluster."""
    eks = present(cluster.spec.cluster.eks,
                  f"validated: InferenceCluster {cluster.name}, an EKS cluster, has an eks block")
    pools: list[EksPoolArgs] = []
    for pool, machine in provisioned_pools(cluster, fleet, lambda provisioning: provisioning.eks):
        block = pool.capacity_block.capacity_reservation_id if pool.capacity_block else None
        pools.append({**machine_pool(pool, machine.instance_type, machine.disk_size_gb, machine.accelerator),
                      "capacity_reservation_id": block})
    return {"name": cluster.name, "region": eks.region, "kubernetes_version": eks.kubernetes_version, "pools": pools,
            "access_entries": [(entry.principal_arn, str(entry.policy)) for entry in eks.access_entries],
            "deletion_protection": cluster.spec.deletion_policy is DeletionPolicy.ORPHAN}


def build(name: str, manifest: ClusterManifest, inputs: ClusterInputs, opts: ResourceOptions) -> EksCluster:
    return EksCluster(f"{name}-eks", {**eks_args(manifest, inputs["fleet"]), "storage_class_name": inputs["rwx_storage_class"],
                                      "provider_settings": inputs["provider_settings"],
                                      "pool_nodes": inputs["pool_nodes"]}, opts)


def desired_size(pool: EksPoolArgs, held: int) -> int:
    """The nodes a pool's group runs: what the placement holds there, within the pool's floor and ceiling."""
    return min(max(held, pool["min_node_count"]), pool["max_node_count"])


def _assume(service: str, *actions: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions or ("sts:AssumeRole",))}]})


class EksCluster(ClusterComponent):
    """An EKS cluster with NVIDIA GPU node groups, an EFS RWX class and a kubeconfig."""

    storage_class_name: str
    """The ReadWriteMany StorageClass on EFS (access-point provisioning)."""
    aws_provider: aws.Provider
    """The cluster's regional provider (with its credentials set's settings, if any)."""
    cluster: aws.eks.Cluster
    node_groups: dict[str, aws.eks.NodeGroup]
    """GPU node groups by pool name."""

    def __init__(self, name: str, args: EksClusterArgs, opts: ResourceOptions | None = None):
        super().__init__("modelplane:index:EksCluster", name, {}, opts)
        self.storage_class_name = args.get("storage_class_name", RWX_STORAGE_CLASS)
        self.aws_provider = present(explicit_provider(aws.Provider, f"{name}-aws", args.get("provider_settings"), self,
                                                      region=args["region"]),
                                    f"{name}: an EKS cluster always has its own regional provider")
        zones = self._zones(args)
        self._child = ResourceOptions(parent=self, provider=self.aws_provider)
        vpc_cidr = args.get("vpc_cidr", "10.20.0.0/16")
        vpc, public, private = self._network(name, args["name"], vpc_cidr, zones)

        cluster_role, cluster_ready = self._role(f"{name}-cluster-role", "eks.amazonaws.com",
                                                 ["AmazonEKSClusterPolicy"])
        node_role, nodes_ready = self._role(f"{name}-node-role", "ec2.amazonaws.com", NODE_POLICIES)
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster", name=args["name"], version=args["kubernetes_version"], role_arn=cluster_role.arn,
            vpc_config={"subnet_ids": [s.id for s in (*private.values(), *public.values())],
                        "endpoint_private_access": True, "endpoint_public_access": True},
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            # set only when asked: a stack that never set it sees no change
            deletion_protection=True if args.get("deletion_protection") else None,
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=cluster_ready)))
        system = aws.eks.NodeGroup(
            f"{name}-system", cluster_name=self.cluster.name, node_group_name="modelplane-system",
            node_role_arn=node_role.arn,
            subnet_ids=[s.id for s in private.values()], ami_type="AL2023_x86_64_STANDARD",
            instance_types=[args.get("system_instance_type", "m6i.large")],
            scaling_config={"desired_size": 2, "min_size": 1, "max_size": 3},
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=nodes_ready)))
        held = pulumi.Output.from_input(args.get("pool_nodes", {}))
        self.node_groups = {pool["name"]: self._gpu_group(name, pool, held, node_role, nodes_ready, private)
                            for pool in args["pools"]}
        self._access_entries(name, args.get("access_entries", ()))
        file_system = self._efs(name, vpc, vpc_cidr, private, system)

        endpoint, ca = self.cluster.endpoint, self.cluster.certificate_authority.data
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(endpoint, ca).apply(
            lambda values: eks_kubeconfig(args["name"], args["region"], values[0], values[1])))
        self.provided_by(lambda: kubernetes_provider(name, args["name"], self.kubeconfig, self, depends_on=[system]))
        rwx_storage_class(name, self.storage_class_name, "efs.csi.aws.com",
                          {"provisioningMode": "efs-ap", "fileSystemId": file_system.id, "directoryPerms": "700"},
                          self.provider, self, self.cluster)
        self.anchor = self.cluster
        self.register_outputs({"kubeconfig": self.kubeconfig, "endpoint": endpoint})

    def _access_entries(self, name: str, entries: Sequence[tuple[str, str]]) -> None:
        """An access entry per principal with its policy cluster-wide (`authentication_mode: API`)."""
        for index, (principal, policy) in enumerate(entries):
            entry = aws.eks.AccessEntry(f"{name}-access-{index}", cluster_name=self.cluster.name,
                                        principal_arn=principal, opts=self._child)
            aws.eks.AccessPolicyAssociation(
                f"{name}-access-{index}-policy", cluster_name=self.cluster.name, principal_arn=entry.principal_arn,
                policy_arn=f"arn:aws:eks::aws:cluster-access-policy/{policy}", access_scope={"type": "cluster"},
                opts=self._child)

    def _network(self, name: str, cluster: str, cidr: str, zones: list[str]
                 ) -> tuple[aws.ec2.Vpc, dict[str, aws.ec2.Subnet], dict[str, aws.ec2.Subnet]]:
        """The VPC: per zone a public subnet (load balancers, NAT) and a private one (nodes)."""
        vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=cidr, enable_dns_hostnames=True, enable_dns_support=True,
                          tags={"Name": cluster}, opts=self._child)
        blocks = list(ipaddress.ip_network(cidr).subnets(new_prefix=20))
        owned = {f"kubernetes.io/cluster/{cluster}": "shared"}
        public: dict[str, aws.ec2.Subnet] = {}
        private: dict[str, aws.ec2.Subnet] = {}
        for index, zone in enumerate(zones):
            public[zone] = aws.ec2.Subnet(
                f"{name}-public-{zone}", vpc_id=vpc.id, availability_zone=zone, cidr_block=str(blocks[index]),
                map_public_ip_on_launch=True, tags={**owned, "kubernetes.io/role/elb": "1"}, opts=self._child)
            private[zone] = aws.ec2.Subnet(
                f"{name}-private-{zone}", vpc_id=vpc.id, availability_zone=zone,
                cidr_block=str(blocks[len(blocks) // 2 + index]),
                tags={**owned, "kubernetes.io/role/internal-elb": "1"}, opts=self._child)
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, opts=self._child)
        nat_ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", opts=self._child)
        nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=nat_ip.id, subnet_id=public[zones[0]].id,
                                 opts=self._child)
        default_routes: list[tuple[str, dict[str, aws.ec2.Subnet], aws.ec2.RouteTableRouteArgsDict]] = [
            ("public", public, {"cidr_block": "0.0.0.0/0", "gateway_id": gateway.id}),
            ("private", private, {"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id})]
        for kind, subnets, route in default_routes:
            table = aws.ec2.RouteTable(f"{name}-{kind}-routes", vpc_id=vpc.id, routes=[route], opts=self._child)
            for zone, subnet in subnets.items():
                aws.ec2.RouteTableAssociation(f"{name}-{kind}-{zone}", subnet_id=subnet.id, route_table_id=table.id,
                                              opts=self._child)
        return vpc, public, private

    def _role(self, name: str, service: str, policies: Sequence[str], *actions: str
              ) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
        """A role `service` assumes with AWS-managed `policies`, and what to wait for before using it."""
        role = aws.iam.Role(name, assume_role_policy=_assume(service, *actions), opts=self._child)
        attached = [aws.iam.RolePolicyAttachment(f"{name}-{policy.rsplit('/', 1)[-1]}", role=role.name,
                                                 policy_arn=MANAGED + policy, opts=self._child)
                    for policy in policies]
        return role, [role, *attached]

    def _zones(self, args: EksClusterArgs) -> list[str]:
        """The VPC's zones: as given, else the pools', completed to EKS's two with the region's
        first available zones (`aws.get_availability_zones`, only when the pools name fewer)."""
        named = {zone for pool in args["pools"] for zone in pool["zones"]}
        zones = sorted(args.get("zones") or named)
        if len(zones) < 2:
            listed = aws.get_availability_zones(
                state="available", filters=[{"name": "opt-in-status", "values": ["opt-in-not-required"]}],
                opts=pulumi.InvokeOptions(provider=self.aws_provider)).names or []
            zones = sorted({*zones, *[zone for zone in sorted(listed) if zone not in zones][: 2 - len(zones)]})
        if len(zones) < 2:
            raise ValueError(f"EKS cluster {args['name']}: EKS needs subnets in at least two availability zones; "
                             f"the pools name {sorted(named) or 'none'} and the region lists no more: list zones "
                             "on the nodePools or pass zones")
        outside = sorted(named - set(zones))
        if outside:
            raise ValueError(f"EKS cluster {args['name']}: pools use zones {outside} outside the VPC's zones {zones}")
        return zones

    def _gpu_group(self, name: str, pool: EksPoolArgs, held: pulumi.Output[Mapping[str, int]], role: aws.iam.Role,
                   role_ready: list[pulumi.Resource], private: dict[str, aws.ec2.Subnet]) -> aws.eks.NodeGroup:
        subnets = [private[zone].id for zone in pool["zones"]] or [s.id for s in private.values()]
        reservation = pool.get("capacity_reservation_id")
        template = self._capacity_block_template(name, pool, reservation) if reservation else None
        return aws.eks.NodeGroup(
            pool_name(name, pool["name"]), cluster_name=self.cluster.name, node_group_name=pool["name"],
            node_role_arn=role.arn, subnet_ids=subnets, ami_type=GPU_AMI,
            instance_types=None if template else [pool["machine_type"]],
            disk_size=None if template else pool["disk_size_gb"],
            capacity_type="CAPACITY_BLOCK" if template else None, launch_template=template,
            labels=pool_labels(pool["name"], pool["accelerator_type"]), taints=[GPU_TAINT],
            scaling_config={"desired_size": held.apply(lambda nodes: desired_size(pool, nodes.get(pool["name"], 0))),
                            "min_size": pool["min_node_count"], "max_size": max(pool["max_node_count"], 1)},
            opts=aliased(ResourceOptions.merge(self._child, ResourceOptions(depends_on=role_ready)),
                         *legacy_pool_name(name, pool["name"])))

    def _capacity_block_template(self, name: str, pool: EksPoolArgs,
                                 reservation: str) -> aws.eks.NodeGroupLaunchTemplateArgsDict:
        """A launch template that runs the pool's instances in its Capacity Block (EKS takes a
        capacity-block node group's instance type and disk from its template)."""
        template = aws.ec2.LaunchTemplate(
            f"{name}-{pool['name']}-capacity-block", instance_type=pool["machine_type"],
            instance_market_options={"market_type": "capacity-block"},
            capacity_reservation_specification={"capacity_reservation_target": {"capacity_reservation_id": reservation}},
            block_device_mappings=[{"device_name": ROOT_DEVICE, "ebs": {
                "volume_size": pool["disk_size_gb"], "volume_type": "gp3", "delete_on_termination": "true"}}],
            opts=self._child)
        return {"id": template.id, "version": template.latest_version.apply(str)}

    def _efs(self, name: str, vpc: aws.ec2.Vpc, vpc_cidr: str, private: dict[str, aws.ec2.Subnet],
             system: aws.eks.NodeGroup) -> aws.efs.FileSystem:
        """EFS for ReadWriteMany volumes, reachable from the nodes, and the CSI driver add-on."""
        file_system = aws.efs.FileSystem(f"{name}-efs", encrypted=True, throughput_mode="elastic",
                                         tags={"Name": f"{name}-model-cache"}, opts=self._child)
        nfs = aws.ec2.SecurityGroup(
            f"{name}-efs-nfs", vpc_id=vpc.id, description="NFS from the cluster's VPC to EFS",
            ingress=[{"protocol": "tcp", "from_port": 2049, "to_port": 2049, "cidr_blocks": [vpc_cidr]}],
            egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}], opts=self._child)
        for zone, subnet in private.items():
            aws.efs.MountTarget(f"{name}-efs-{zone}", file_system_id=file_system.id, subnet_id=subnet.id,
                                security_groups=[nfs.id], opts=self._child)
        agent = aws.eks.Addon(f"{name}-pod-identity", cluster_name=self.cluster.name,
                              addon_name="eks-pod-identity-agent", opts=self._child)
        driver_role, driver_ready = self._role(f"{name}-efs-csi-role", "pods.eks.amazonaws.com",
                                               ["service-role/AmazonEFSCSIDriverPolicy"],
                                               "sts:AssumeRole", "sts:TagSession")
        aws.eks.Addon(
            f"{name}-efs-csi", cluster_name=self.cluster.name, addon_name="aws-efs-csi-driver",
            pod_identity_associations=[{"role_arn": driver_role.arn, "service_account": "efs-csi-controller-sa"}],
            opts=ResourceOptions.merge(self._child, ResourceOptions(depends_on=[agent, system, *driver_ready])))
        return file_system
